//! A spec this worker holds the lease of, and the one kind of push that touches it: taking it,
//! and publishing its work with the lease renewed (or deleted, to release it) in ONE atomic
//! push checked against the lease this worker holds (fencing, docs/fleet.md). A refused
//! push changed nothing on the remote; what it means is read from the lease there now.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::fleet::lease::Lease;
use crate::fleet::names;
use crate::fleet::net::{Expect, PushOutcome, RefUpdate};
use crate::git::{Oid, branch_for};
use crate::policy::lease::Refused;
use crate::store::workspace::Workspace;

/// Who this worker is and where it publishes.
#[derive(Debug, Clone)]
pub struct Me {
    /// `<host>:<pid>:<random>`: unique among the workers of a fleet.
    pub worker: String,
    pub host: String,
    pub pid: u32,
    pub remote: String,
    pub lease: Duration,
    /// Every network step's limit (a push, a fetch).
    pub timeout: Duration,
}

impl Me {
    /// A lease commit taken or renewed at `now` (first taken at `taken_at`).
    fn lease_commit(&self, ws: &Workspace, taken_at: DateTime<Utc>) -> anyhow::Result<Oid> {
        let now = Utc::now();
        crate::fleet::lease::write_lease(
            &ws.main.repo,
            &Lease {
                worker: self.worker.clone(),
                host: self.host.clone(),
                pid: self.pid,
                taken_at,
                renewed_at: now,
                expires_at: crate::policy::lease::expires_at(now, self.lease),
                lease_secs: self.lease.as_secs(),
            },
        )
    }

    fn push(&self, ws: &Workspace, updates: &[RefUpdate]) -> anyhow::Result<PushOutcome> {
        crate::fleet::net::push_atomic(&ws.root, &self.remote, updates, self.timeout)
    }
}

/// A spec whose lease this worker holds.
#[derive(Debug)]
pub struct Held {
    pub spec: String,
    /// The lease commit on the remote that is this worker's.
    pub lease: Oid,
    pub taken_at: DateTime<Utc>,
    /// The folder's commit and the branch tip this worker published last (or found there).
    pub folder: Option<Oid>,
    pub branch: Option<Oid>,
    /// Just before the last push the remote accepted (monotonic: the lease it wrote expires
    /// `lease` after this at the latest).
    pub last_success: Instant,
    /// Publications of work (the branch or the folder changed).
    pub publications: usize,
    /// The lease is lost: nothing of this spec is pushed again.
    pub lost: Option<Lost>,
    /// The last push deleted the lease: the spec was let go.
    pub released: bool,
    /// A push whose answer never came (a timeout): it may have landed all the same. Its lease
    /// commit, folder and branch; when the remote's lease is that commit, it did land (the
    /// push was atomic), and they are this worker's.
    pub maybe_landed: Option<(Oid, Option<Oid>, Option<Oid>)>,
}

/// Why a lease is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// A push was refused; what the lease on the remote said then.
    Refused(Refused),
    /// No renewal reached the remote for as long as the lease lasts.
    Lapsed,
    /// This clone's copy of the spec cannot be published (its folder holds what the remote
    /// would refuse, a link planted where a published file belongs; or the clone cannot write
    /// a commit, its disk full): the spec was let go, and another worker builds it from its
    /// last publication.
    Unpublishable(String),
}

/// What a push of a held spec came to.
#[derive(Debug)]
pub enum Pushed {
    Done,
    /// Refused by the remote: what the lease there says now.
    Refused(Refused),
    /// The remote could not be reached (or the push timed out): nothing is known to have
    /// changed; try again at the next heartbeat.
    Unreachable(anyhow::Error),
    /// Nothing was pushed: the publication could not be made here (see [`Lost::Unpublishable`]).
    Unpublishable(anyhow::Error),
}

/// Take `spec` with a new lease commit, the remote's lease ref expected to be `expect`: the
/// lease when the remote accepted it (`None`: refused, another worker was first).
pub fn take(
    ws: &Workspace,
    me: &Me,
    spec: &str,
    expect: Expect,
) -> anyhow::Result<Option<(Oid, DateTime<Utc>, Instant)>> {
    let taken_at = Utc::now();
    let started = Instant::now();
    let lease = me.lease_commit(ws, taken_at)?;
    let update = RefUpdate {
        dst: names::lease_ref(spec),
        new: Some(lease),
        expect,
    };
    Ok(match me.push(ws, &[update])? {
        PushOutcome::Pushed => Some((lease, taken_at, started)),
        PushOutcome::Refused { .. } => None,
    })
}

/// Delete the lease of `spec` (`mine`), nothing else: a spec taken and found not to be
/// built after all. Best effort: a lease left behind expires.
pub fn let_go(ws: &Workspace, me: &Me, spec: &str, mine: Oid) -> anyhow::Result<bool> {
    let update = RefUpdate {
        dst: names::lease_ref(spec),
        new: None,
        expect: Expect::At(mine),
    };
    Ok(matches!(me.push(ws, &[update])?, PushOutcome::Pushed))
}

/// Publish what changed of `held` (its folder, its branch) with its lease renewed, or with
/// its lease deleted when `release`: one atomic push, every ref expected where this worker
/// left it. Nothing changed and not releasing: a renewal alone (the heartbeat).
pub fn publish(ws: &Workspace, me: &Me, held: &mut Held, release: bool) -> anyhow::Result<Pushed> {
    let repo = &ws.main.repo;
    let started = Instant::now();
    let spec = held.spec.clone();
    // The folder before the branch: a chunk's commit is made before the plan records it, so
    // a plan read first never says more than the branch read after it holds.
    let prepared = (|| -> anyhow::Result<_> {
        let paths = ws.spec(&spec)?;
        let message = format!("runner: {spec} published by {}", me.worker);
        // The plan as runner judges it, not what an agent mid-session left in the file.
        let plan = plan_as(repo, &paths, held.folder);
        let folder = crate::fleet::snapshot::commit_folder_as(
            repo,
            &paths.dir,
            held.folder,
            &message,
            plan,
        )?;
        let tree = |oid: Option<Oid>| oid.and_then(|o| crate::git::history::tree_of(repo, o));
        let folder = (tree(Some(folder)) != tree(held.folder)).then_some(folder);
        let branch = ws
            .main
            .branch_tip(&branch_for(&spec))
            .filter(|tip| Some(*tip) != held.branch);
        let lease = match release {
            true => None,
            false => Some(me.lease_commit(ws, held.taken_at)?),
        };
        Ok((folder, branch, lease))
    })();
    // Made here, before any push: not the remote's fault, and not better at the next
    // heartbeat.
    let (folder, branch, lease) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => return Ok(Pushed::Unpublishable(e)),
    };
    let mut updates = vec![RefUpdate {
        dst: names::lease_ref(&spec),
        new: lease,
        expect: Expect::At(held.lease),
    }];
    let expect = |last: Option<Oid>| last.map_or(Expect::Absent, Expect::At);
    if let Some(folder) = folder {
        updates.push(RefUpdate {
            dst: names::spec_ref(&spec),
            new: Some(folder),
            expect: expect(held.folder),
        });
    }
    if let Some(branch) = branch {
        updates.push(RefUpdate {
            dst: names::branch_ref(&spec),
            new: Some(branch),
            expect: expect(held.branch),
        });
    }
    match me.push(ws, &updates) {
        Ok(PushOutcome::Pushed) => {
            if let Some(lease) = lease {
                held.lease = lease;
            }
            held.folder = folder.or(held.folder);
            held.branch = branch.or(held.branch);
            held.last_success = started;
            // Whatever an earlier timed-out push did, this one moved the refs on from it.
            held.maybe_landed = None;
            if folder.is_some() || branch.is_some() {
                held.publications += 1;
            }
            Ok(Pushed::Done)
        }
        Ok(PushOutcome::Refused { .. }) => {
            if let Some((lease, folder, branch)) = held.maybe_landed.take()
                && remote_lease(ws, me, &spec)? == Some(lease)
            {
                // The push whose answer was lost landed: its lease is this worker's (never
                // given up for a lost answer), and so are its folder and branch.
                held.lease = lease;
                held.folder = folder.or(held.folder);
                held.branch = branch.or(held.branch);
                return Ok(Pushed::Unreachable(anyhow::anyhow!(
                    "an earlier push to {} landed though no answer came back; pushing again",
                    me.remote
                )));
            }
            Ok(Pushed::Refused(why_refused(ws, me, held)?))
        }
        Err(e) => {
            if let Some(lease) = lease {
                held.maybe_landed = Some((lease, folder, branch));
            }
            Ok(Pushed::Unreachable(e))
        }
    }
}

/// What this publication holds as `paths`' plan (`engine::recovery::plan_to_publish`); the
/// last publication's plan is read from `last` (the folder's commit this worker published
/// last, or found there when it took the spec).
fn plan_as(
    repo: &crate::git::Repository,
    paths: &crate::store::workspace::SpecPaths,
    last: Option<Oid>,
) -> crate::fleet::snapshot::PlanAs {
    use crate::engine::recovery::PlanToPublish;
    use crate::fleet::snapshot::PlanAs;
    match crate::engine::recovery::plan_to_publish(paths) {
        PlanToPublish::File => PlanAs::File,
        PlanToPublish::Settled(plan) => {
            PlanAs::Bytes(paths.plan.with_bytes_of(&plan, <[u8]>::to_vec))
        }
        PlanToPublish::Previous => last
            .and_then(|folder| {
                crate::git::history::files_at(
                    repo,
                    folder,
                    "",
                    crate::fleet::snapshot::MAX_FILE_BYTES as usize,
                )
                .into_iter()
                .find(|(name, _)| name == crate::plan::PLAN_FILE)
            })
            .map_or(PlanAs::Absent, |(_, bytes)| PlanAs::Bytes(bytes)),
    }
}

/// The lease ref's commit on the remote now (`None`: no lease there).
fn remote_lease(ws: &Workspace, me: &Me, spec: &str) -> anyhow::Result<Option<Oid>> {
    let lease_ref = names::lease_ref(spec);
    Ok(crate::fleet::net::ls_remote(
        &ws.root,
        &me.remote,
        std::slice::from_ref(&lease_ref),
        me.timeout,
    )?
    .into_iter()
    .find(|(name, _)| *name == lease_ref)
    .map(|(_, oid)| oid))
}

/// What a refusal means: read the lease on the remote now.
fn why_refused(ws: &Workspace, me: &Me, held: &Held) -> anyhow::Result<Refused> {
    let lease_ref = names::lease_ref(&held.spec);
    let now_at = remote_lease(ws, me, &held.spec)?;
    let holder = match now_at {
        Some(oid) if oid != held.lease => {
            let local = names::fetched_ref(&me.remote, "leases", &held.spec);
            crate::fleet::net::fetch(
                &ws.root,
                &me.remote,
                &[format!("+{lease_ref}:{local}")],
                me.timeout,
            )?;
            // Read what the fetch brought, not the oid `ls_remote` saw: the new holder may
            // have renewed in between, and that older lease object never arrives.
            let fetched = crate::git::refs::target(&ws.main.repo, &local).unwrap_or(oid);
            crate::fleet::lease::read_lease(&ws.main.repo, fetched)
                .ok()
                .map(|l| format!("{} on {}", l.worker, l.host))
        }
        _ => None,
    };
    Ok(crate::policy::lease::after_refusal(
        now_at.map(|oid| (oid, holder)),
        &held.lease,
    ))
}
