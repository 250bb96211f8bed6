//! Agent account names (`fleet.account`, a remote's `refs/runner/pauses/<account>`): a pure
//! check, used by the config and by `fleet` alike.

/// Whether `name` may be an agent account's name (`fleet.account`, or read from a remote's
/// pause ref): 1 to 64 ASCII letters, digits, `.`, `_`, `-` or `@`, not starting with `.` or
/// `-`, no `..`, not ending in `.lock`. Such a name is safe as one ref component and as a file
/// name.
pub fn is_account_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
        && !name.starts_with(['.', '-'])
        && !name.contains("..")
        && !name.contains("@{")
        && !name.ends_with(".lock")
}
