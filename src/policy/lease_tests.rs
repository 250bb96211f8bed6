use super::*;

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

const LEASE: Duration = Duration::from_secs(60);

#[test]
fn a_lease_expires_only_once_its_time_has_passed() {
    assert!(!expired(t(10), t(9)));
    assert!(!expired(t(10), t(10)));
    assert!(expired(t(10), t(11)));
    assert_eq!(expires_at(t(0), LEASE), t(60));
}

#[test]
fn renewal_is_due_every_third_and_the_lease_lapses_after_a_whole_lease_without_one() {
    assert!(!renew_due(Duration::from_secs(19), LEASE));
    assert!(renew_due(Duration::from_secs(20), LEASE));
    assert!(!lapsed(Duration::from_secs(59), LEASE));
    assert!(lapsed(Duration::from_secs(60), LEASE));
    // Two renewals may fail before the lease lapses.
    assert!(!lapsed(Duration::from_secs(2 * 20 + 19), LEASE));
}

#[test]
fn the_leases_are_looked_at_twice_per_renewal_interval() {
    assert_eq!(tick_every(LEASE), Duration::from_secs(10));
    assert_eq!(
        tick_every(Duration::from_secs(3)),
        Duration::from_millis(500)
    );
    assert_eq!(
        tick_every(Duration::from_secs(2)),
        Duration::from_nanos(333_333_333)
    );
    assert_eq!(
        tick_every(Duration::from_secs(3600)),
        Duration::from_secs(10)
    );
    // A renewal is at most a sixth of the lease late.
    for secs in [2, 3, 4, 60, 600] {
        let lease = Duration::from_secs(secs);
        assert!(lease / 3 + tick_every(lease) <= lease / 2, "{secs}");
    }
}

#[test]
fn an_idle_worker_polls_a_third_of_the_lease_within_bounds() {
    assert_eq!(poll_every(LEASE), Duration::from_secs(20));
    assert_eq!(poll_every(Duration::from_secs(2)), Duration::from_secs(1));
    assert_eq!(
        poll_every(Duration::from_secs(3600)),
        Duration::from_secs(20)
    );
    assert_eq!(poll_every(Duration::from_secs(6)), Duration::from_secs(2));
}

fn facts(total: usize, completed: usize) -> PlanFacts {
    PlanFacts {
        total,
        completed,
        ..PlanFacts::default()
    }
}

#[test]
fn a_published_spec_stands_where_its_plan_says() {
    assert_eq!(published(None, false), Published::NotPlanned);
    assert_eq!(published(None, true), Published::Discarded);
    assert_eq!(
        published(Some(Ok(facts(0, 0))), false),
        Published::NotPlanned
    );
    assert_eq!(published(Some(Ok(facts(3, 1))), false), Published::Open);
    assert_eq!(published(Some(Ok(facts(3, 3))), false), Published::Complete);
    assert_eq!(published(Some(Ok(facts(3, 1))), true), Published::Discarded);
    let merged = PlanFacts {
        merged: true,
        ..facts(3, 3)
    };
    assert_eq!(published(Some(Ok(merged)), true), Published::Merged);
    let failed = PlanFacts {
        failed: 1,
        ..facts(3, 1)
    };
    assert_eq!(
        published(Some(Ok(failed)), false),
        Published::NeedsHuman("1 chunk failed".into())
    );
    let blocked = PlanFacts {
        blocked: 2,
        ..facts(3, 1)
    };
    assert_eq!(
        published(Some(Ok(blocked)), false),
        Published::NeedsHuman("2 chunks blocked".into())
    );
    let spent = PlanFacts {
        exhausted: true,
        ..facts(3, 1)
    };
    assert_eq!(
        published(Some(Ok(spent)), false),
        Published::NeedsHuman("its budget is spent".into())
    );
    assert!(matches!(
        published(Some(Err("line 1".into())), false),
        Published::NeedsHuman(why) if why.contains("line 1")
    ));
}

fn held(holder: &str, until: i64) -> LeaseSeen {
    LeaseSeen::Held {
        holder: holder.into(),
        expires_at: t(until),
    }
}

#[test]
fn only_open_specs_that_nobody_holds_or_whose_lease_expired_are_taken() {
    let now = t(100);
    assert_eq!(
        takeable(&Published::Open, &LeaseSeen::Absent, now),
        Takeable::Yes
    );
    assert_eq!(
        takeable(&Published::NotPlanned, &held("w1", 99), now),
        Takeable::Yes
    );
    assert_eq!(
        takeable(&Published::Open, &held("w1", 100), now),
        Takeable::No("w1 holds its lease".into())
    );
    assert!(matches!(
        takeable(&Published::Open, &LeaseSeen::Unbelieved, now),
        Takeable::No(_)
    ));
    for state in [
        Published::Complete,
        Published::Merged,
        Published::Discarded,
        Published::NeedsHuman("x".into()),
    ] {
        assert!(
            matches!(takeable(&state, &LeaseSeen::Absent, now), Takeable::No(_)),
            "{state:?}"
        );
    }
}

#[test]
fn the_specs_to_take_are_in_name_order_without_those_run_here() {
    let offer = |spec: &str, state: Published, lease: LeaseSeen| Offer {
        spec: spec.into(),
        state,
        lease,
    };
    let offers = vec![
        offer("004-d", Published::Open, LeaseSeen::Absent),
        offer("001-a", Published::Open, LeaseSeen::Absent),
        offer("002-b", Published::Complete, LeaseSeen::Absent),
        offer("003-c", Published::Open, held("w2", 200)),
        offer("005-e", Published::NotPlanned, held("w2", 50)),
        offer("006-f", Published::Open, LeaseSeen::Absent),
        offer("007-g", Published::Open, LeaseSeen::Absent),
    ];
    assert_eq!(
        to_take(&offers, &["006-f".into()], &["007-g".into()], t(100)),
        vec!["001-a", "004-d", "005-e"]
    );
}

#[test]
fn a_refusal_is_a_lost_lease_unless_the_lease_is_still_mine() {
    assert_eq!(
        after_refusal(Some((2, Some("w2".into()))), &1),
        Refused::Lost {
            holder: Some("w2".into())
        }
    );
    assert_eq!(
        after_refusal::<i32>(None, &1),
        Refused::Lost { holder: None }
    );
    assert_eq!(
        after_refusal(Some((3, None)), &1),
        Refused::Lost {
            holder: Some("an unreadable lease".into())
        }
    );
    assert_eq!(
        after_refusal(Some((1, Some("me".into()))), &1),
        Refused::Diverged
    );
}

#[test]
fn an_accounts_pause_closes_the_gate_until_its_time_then_one_session_checks() {
    assert_eq!(gate(None, t(0)), Gate::Open);
    assert_eq!(gate(Some(t(10)), t(0)), Gate::Closed { until: t(10) });
    assert_eq!(gate(Some(t(10)), t(10)), Gate::CheckFirst);
    assert_eq!(gate(Some(t(10)), t(11)), Gate::CheckFirst);
    assert_eq!(check_claim_until(t(0), LEASE), t(60));
}
