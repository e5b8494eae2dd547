//! Concurrent writers in one process.

use super::*;

/// Threads writing distinct keys at once lose no write.
pub fn concurrent_writers_lose_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("concurrent");
    let threads = 8;
    let per = 40;
    thread::scope(|scope| {
        for t in 0..threads {
            let s = Arc::clone(&s);
            let p = p.clone();
            scope.spawn(move || {
                for i in 0..per {
                    s.put(Put::new(p.clone(), Some(key(&format!("t{t}-{i}"))), i))
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(
        s.count(&p, &Filter::default()).unwrap(),
        (threads * per) as u64
    );
    for t in 0..threads {
        for i in 0..per {
            assert_eq!(get_value(&*s, &p, &format!("t{t}-{i}")), Some(json!(i)));
        }
    }
}

/// Threads writing the same key at once leave exactly one record holding one of the values.
pub fn concurrent_upserts_keep_one_record(h: &dyn Harness) {
    let s = h.open();
    let p = part("concurrent");
    thread::scope(|scope| {
        for t in 0..6 {
            let s = Arc::clone(&s);
            let p = p.clone();
            scope.spawn(move || {
                for i in 0..30 {
                    s.put(Put::new(p.clone(), Some(key("shared")), t * 100 + i))
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
    let v = get_value(&*s, &p, "shared").unwrap();
    assert!(v.as_i64().is_some_and(|n| n % 100 < 30 && n / 100 < 6));
}
