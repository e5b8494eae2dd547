//! Expiry: TTL on every read path, and purging.

use super::*;

/// An expired record is gone from get (key and id), list, count and search, and its key
/// starts afresh.
pub fn ttl_expires_everywhere(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let ttl = Ttl::new(SHORT_TTL).unwrap();
    let w = s
        .put(Put::new(p.clone(), Some(key("temp")), "ephemeral lisbon note").with_ttl(Some(ttl)))
        .unwrap()
        .memory;
    set(&*s, &p, "keep", "permanent lisbon note");
    assert!(w.expires_at.is_some());
    assert!(s.get(&at(&p, "temp")).unwrap().is_some());
    let started = Instant::now();
    thread::sleep(PAST_SHORT_TTL);
    assert!(started.elapsed() >= PAST_SHORT_TTL);
    assert!(s.get(&at(&p, "temp")).unwrap().is_none());
    let by_id = Locator::Id {
        tenant: p.tenant.clone(),
        id: w.id,
    };
    assert!(s.get(&by_id).unwrap().is_none());
    assert_eq!(listed(&*s, &p, Filter::default()), ["keep"]);
    let hits = text_hits(&*s, &p, "lisbon note", Filter::default());
    assert_eq!(keys_of(&hits), ["keep"]);
    let again = s
        .put(Put::new(p.clone(), Some(key("temp")), "new"))
        .unwrap();
    assert_eq!(again.status, WriteStatus::Created);
    assert_ne!(again.memory.id, w.id);
    assert!(again.memory.expires_at.is_none());
}

/// With no TTL a record has no expiry, and replacing it with a TTL sets one (and back).
pub fn ttl_absent_never_expires(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = set(&*s, &p, "k", "v");
    assert!(m.expires_at.is_none());
    let got = s.get(&at(&p, "k")).unwrap().unwrap();
    assert!(got.expires_at.is_none());
    let ttl = Ttl::from_secs(3600).unwrap();
    s.put(Put::new(p.clone(), Some(key("k")), "v").with_ttl(Some(ttl)))
        .unwrap();
    assert!(s.get(&at(&p, "k")).unwrap().unwrap().expires_at.is_some());
    s.put(Put::new(p.clone(), Some(key("k")), "v")).unwrap();
    assert!(s.get(&at(&p, "k")).unwrap().unwrap().expires_at.is_none());
}

/// `purge_expired` leaves no expired record behind (natively expiring stores may report 0).
pub fn purge_removes_expired(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let ttl = Ttl::new(Duration::from_millis(100)).unwrap();
    for i in 0..3 {
        s.put(Put::new(p.clone(), Some(key(&format!("t{i}"))), i).with_ttl(Some(ttl)))
            .unwrap();
    }
    set(&*s, &p, "keep", 1);
    thread::sleep(Duration::from_millis(250));
    // What a purge would delete is counted first, deleting nothing; the purge then
    // deletes exactly that many (a natively expiring store counts and purges none).
    let waiting = s.count_expired().unwrap();
    assert!(waiting <= 3);
    assert_eq!(
        s.count_expired().unwrap(),
        waiting,
        "counting deletes nothing"
    );
    let purged = s.purge_expired().unwrap();
    assert_eq!(purged, waiting);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
    assert_eq!(s.count_expired().unwrap(), 0);
    assert_eq!(s.purge_expired().unwrap(), 0);
}
