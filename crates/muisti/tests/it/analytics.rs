//! The dashboard's engine features over every backend: aggregates in one pass, listing by
//! state with full pages, and the similarity matrix.

use muisti::{
    Engine, Filter, ListQuery, MemoryScope, MemoryState, Patch, Put, RecallRequest, UpdateRequest,
    analytics::{AnalyticsQuery, MAX_SIMILARITY},
};

use super::ns;

fn write(engine: &Engine, user: &str, text: &str, scope: MemoryScope) -> muisti::Memory {
    let mut p = Put::new(engine.partition(&ns("default")), None, text);
    p.owner.user_id = Some(user.into());
    p.scope = scope;
    if scope == MemoryScope::ShortTerm {
        p.owner.session_id = Some("s1".into());
    }
    engine.remember(p).expect("remember").memory
}

fn user(u: &str) -> Filter {
    Filter {
        user_id: Some(u.into()),
        ..Filter::default()
    }
}

#[test]
fn analytics_on_every_backend() {
    super::on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, engine| {
            let cat = write(
                &engine,
                "ana",
                "Ana's cat is called Marmalade",
                MemoryScope::LongTerm,
            );
            write(
                &engine,
                "ana",
                "Ana moved to Lisbon in May",
                MemoryScope::ShortTerm,
            );
            let old = write(
                &engine,
                "ana",
                "Ana works as a nurse",
                MemoryScope::LongTerm,
            );
            let new = write(
                &engine,
                "ana",
                "Ana works as a doctor now",
                MemoryScope::LongTerm,
            );
            write(&engine, "bo", "Bo collects stamps", MemoryScope::LongTerm);
            let at = muisti::Locator::Id {
                tenant: engine.tenant().clone(),
                id: old.id,
            };
            let patch = Patch {
                state: Some(MemoryState::Superseded),
                superseded_by: Some(new.id),
                ..Patch::default()
            };
            engine
                .update(UpdateRequest::new(at, patch))
                .expect("supersede");
            for _ in 0..2 {
                let mut req = RecallRequest::new(ns("default"), "what is the cat called", 1);
                req.filter = user("ana");
                engine.recall(&req).expect("recall");
            }
            engine.flush_access();

            let query = AnalyticsQuery {
                filter: user("ana"),
                days: 7,
                top: 1,
            };
            let a = engine
                .insights()
                .analytics(&ns("default"), &query)
                .expect("analytics");
            assert_eq!(a.total, 4, "{url}");
            assert_eq!(a.by_scope.get("long_term"), Some(&3), "{url}");
            assert_eq!(a.by_scope.get("short_term"), Some(&1), "{url}");
            assert_eq!(a.by_state.get("superseded"), Some(&1), "{url}");
            assert_eq!(a.by_state.get("active"), Some(&3), "{url}");
            assert_eq!(a.growth.iter().map(|d| d.count).sum::<u64>(), 4, "{url}");
            let top: Vec<_> = a.top_accessed.iter().map(|m| m.id).collect();
            assert_eq!(top, [cat.id], "{url}");
            assert_eq!(
                a.last_accessed.iter().map(|d| d.count).sum::<u64>(),
                1,
                "{url}"
            );
            let everyone = AnalyticsQuery {
                filter: Filter::default(),
                ..query.clone()
            };
            let all = engine
                .insights()
                .analytics(&ns("default"), &everyone)
                .expect("all");
            assert_eq!(all.total, 5, "{url}");
            let bad = AnalyticsQuery { days: 0, ..query };
            assert!(
                engine.insights().analytics(&ns("default"), &bad).is_err(),
                "{url}"
            );

            // Listing by state: full pages, a cursor that goes on where it stopped.
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let q = ListQuery {
                    filter: user("ana"),
                    after,
                    limit: 2,
                    ..ListQuery::all(engine.partition(&ns("default")))
                };
                let page = engine.list_in_state(q, MemoryState::Active).expect("list");
                assert!(
                    page.items.iter().all(|m| m.state == MemoryState::Active),
                    "{url}"
                );
                seen.extend(page.items.iter().map(|m| m.id));
                match page.next {
                    Some(n) => {
                        assert_eq!(page.items.len(), 2, "{url}");
                        after = Some(n);
                    }
                    None => break,
                }
            }
            assert_eq!(seen.len(), 3, "{url}");
            assert!(!seen.contains(&old.id), "{url}");
            let q = ListQuery {
                filter: user("ana"),
                ..ListQuery::all(engine.partition(&ns("default")))
            };
            let superseded = engine
                .list_in_state(q, MemoryState::Superseded)
                .expect("list");
            let ids: Vec<_> = superseded.items.iter().map(|m| m.id).collect();
            assert_eq!(ids, [old.id], "{url}");

            // Similarity: ones on the diagonal, symmetric, a related pair closer.
            let mems = [cat.clone(), old.clone(), new.clone()];
            let m = engine.insights().similarity(&mems).expect("similarity");
            for (i, row) in m.iter().enumerate() {
                assert!((row[i] - 1.0).abs() < 1e-3, "{url}: {}", row[i]);
                for (j, v) in row.iter().enumerate() {
                    assert!((v - m[j][i]).abs() < 1e-6, "{url}");
                }
            }
            assert!(
                m[1][2] > m[0][1],
                "{url}: nurse/doctor closer than cat/nurse: {m:?}"
            );
            let many = vec![cat; MAX_SIMILARITY + 1];
            assert!(engine.insights().similarity(&many).is_err(), "{url}");
        },
    );
}

/// Listing by importance, last access or creation reads the same on every store, page by
/// page through its cursor, and refuses a cursor of another order.
#[test]
fn ordered_listing_on_every_backend() {
    use muisti::ListOrder;
    super::on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, engine| {
            let made: Vec<muisti::MemoryId> = [0.5, 0.9, 0.5, 0.1, 0.9]
                .into_iter()
                .enumerate()
                .map(|(i, importance)| {
                    let mut p = Put::new(
                        engine.partition(&ns("default")),
                        None,
                        format!("Ana's note number {i}"),
                    );
                    p.owner.user_id = Some("ana".into());
                    p.importance = Some(importance);
                    engine.remember(p).expect("remember").memory.id
                })
                .collect();
            let mut bo = Put::new(engine.partition(&ns("default")), None, "Bo's note");
            bo.owner.user_id = Some("bo".into());
            bo.importance = Some(1.0);
            engine.remember(bo).expect("remember");
            engine.read_for(made[0], Some("ana")).expect("read");
            engine.flush_access();

            let list = |order: ListOrder, limit: usize| {
                let mut seen = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let query = ListQuery {
                        filter: user("ana"),
                        limit,
                        ..ListQuery::all(engine.partition(&ns("default")))
                    };
                    let page = engine
                        .list_ordered(query, order, cursor.as_deref(), Some(MemoryState::Active))
                        .expect("lists");
                    assert!(page.items.len() <= limit, "{url}");
                    seen.extend(page.items.iter().map(|m| m.id));
                    match page.next {
                        Some(next) => cursor = Some(next),
                        None => break seen,
                    }
                }
            };
            let m = |i: usize| made[i];
            let want = [
                (ListOrder::Created, vec![m(0), m(1), m(2), m(3), m(4)]),
                (ListOrder::Newest, vec![m(4), m(3), m(2), m(1), m(0)]),
                // Ties of importance: the accessed one first, then the newest.
                (ListOrder::Importance, vec![m(4), m(1), m(0), m(2), m(3)]),
                (ListOrder::Accessed, vec![m(0), m(4), m(3), m(2), m(1)]),
            ];
            for (order, ids) in want {
                for limit in [1, 2, 5, 100] {
                    assert_eq!(
                        list(order, limit),
                        ids,
                        "{url}: {order} by pages of {limit}"
                    );
                }
            }
            let query = ListQuery {
                limit: 2,
                ..ListQuery::all(engine.partition(&ns("default")))
            };
            let page = engine
                .list_ordered(query.clone(), ListOrder::Importance, None, None)
                .expect("lists");
            assert_eq!(page.items.len(), 2, "{url}: every user's, Bo's first");
            assert_eq!(page.items[0].owner.user_id.as_deref(), Some("bo"), "{url}");
            let err = engine
                .list_ordered(query, ListOrder::Newest, page.next.as_deref(), None)
                .expect_err("another order's cursor");
            assert_eq!(
                err.kind(),
                muisti::ErrorKind::ConflictingFields,
                "{url}: {err}"
            );
        },
    );
}
