//! Checks for stores that several processes share (PostgreSQL, Redis, MySQL): two handles on
//! the same data stand for two servers.

use std::time::{Duration, Instant};

use muisti_core::{
    Filter, Locator, MemoryId, Namespace, Partition, Patch, Put, Store, StoredVector, TextQuery,
    Timestamp, UpdateRequest, VectorQuery,
};

fn text(s: &dyn Store, p: &Partition, q: &str) -> Vec<MemoryId> {
    s.text_search(&TextQuery {
        partition: p.clone(),
        query: q.into(),
        filter: Filter::default(),
        limit: 50,
    })
    .unwrap()
    .into_iter()
    .map(|h| h.id)
    .collect()
}

/// Every change through one handle is seen by the other's very next read: a write, an
/// update, access counts, a vector, a write through the other, reads by id, a delete and a
/// flush. For stores with in-process copies, open both handles so that every read checks
/// (`staleness_ms=0`); `b` reads first, so it holds a copy before `a` writes.
pub fn changes_are_seen_by_another_handle_at_once(a: &dyn Store, b: &dyn Store) {
    let p = Partition::of(Namespace::default_ns());
    for i in 0..20 {
        a.put(Put::new(p.clone(), None, format!("note {i} about tea")))
            .unwrap();
    }
    assert_eq!(text(b, &p, "tea").len(), 20);
    let m = a
        .put(Put::new(p.clone(), None, "I moved to Lisbon"))
        .unwrap()
        .memory;
    assert_eq!(text(b, &p, "lisbon"), vec![m.id]);
    let at = Locator::Id {
        tenant: p.tenant.clone(),
        id: m.id,
    };
    let patch = Patch {
        content: Some("I moved to Porto".into()),
        ..Default::default()
    };
    a.update(&UpdateRequest::new(at.clone(), patch)).unwrap();
    assert!(text(b, &p, "lisbon").is_empty());
    assert_eq!(text(b, &p, "porto"), vec![m.id]);
    a.touch(&p.tenant, &[m.id, m.id], Timestamp::from_millis(5))
        .unwrap();
    assert_eq!(b.rank_fields(&p, &[m.id]).unwrap()[0].access_count, 2);
    a.set_vectors(
        &p.tenant,
        &[StoredVector {
            id: m.id,
            model: "test".into(),
            vector: vec![1.0, 0.0],
        }],
    )
    .unwrap();
    let near = b
        .vector_search(&VectorQuery {
            partition: p.clone(),
            vector: vec![1.0, 0.0],
            filter: Filter::default(),
            limit: 5,
        })
        .unwrap();
    assert_eq!(near.first().map(|s| s.id), Some(m.id));
    // A write through the other handle: its own reads and the first handle's see it.
    let n = b
        .put(Put::new(p.clone(), None, "Porto has a bridge"))
        .unwrap()
        .memory;
    assert_eq!(text(b, &p, "bridge"), vec![n.id]);
    assert_eq!(text(a, &p, "bridge"), vec![n.id]);
    let ids: Vec<MemoryId> = b
        .get_many(&p.tenant, &[n.id, m.id])
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, vec![n.id, m.id]);
    a.delete(&at).unwrap();
    assert!(text(b, &p, "porto").iter().all(|id| *id != m.id));
    assert!(b.get_many(&p.tenant, &[m.id]).unwrap().is_empty());
    a.flush(&p).unwrap();
    assert!(text(b, &p, "tea").is_empty());
    assert!(text(b, &p, "bridge").is_empty());
}

/// With a staleness window (both handles opened with it), a write through `a` is read by
/// `a` at once and by every read through `b` that starts `window` after it. Returns when `b`
/// first saw it (the measured bound).
pub fn the_staleness_window_bounds_what_another_handle_misses(
    a: &dyn Store,
    b: &dyn Store,
    window: Duration,
) -> Duration {
    let p = Partition::of(Namespace::default_ns());
    assert!(text(a, &p, "lisbon").is_empty());
    assert!(text(b, &p, "lisbon").is_empty());
    a.put(Put::new(p.clone(), None, "I moved to Lisbon"))
        .unwrap();
    let written = Instant::now();
    assert_eq!(
        text(a, &p, "lisbon").len(),
        1,
        "the writer reads its own write"
    );
    // `b` may miss it inside the window (its copy was confirmed just before the write); the
    // first read that sees it is measured...
    let mut seen_after = None;
    while written.elapsed() < window {
        if text(b, &p, "lisbon").len() == 1 {
            seen_after = Some(written.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // ...and every read that starts once the window has passed sees it.
    std::thread::sleep(window.saturating_sub(written.elapsed()));
    assert_eq!(
        text(b, &p, "lisbon").len(),
        1,
        "a read {window:?} after the write sees it"
    );
    seen_after.unwrap_or_else(|| written.elapsed())
}
