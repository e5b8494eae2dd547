//! Import: whole records written as they are, idempotent by id.

use muisti_core::{MemoryState, Record, VectorQuery};

use super::*;

/// A record with every field set away from its default, written at `key` of `p`.
fn full_record(p: &Partition, key_name: &str, text: &str) -> Record {
    let mut put = Put::new(p.clone(), Some(key(key_name)), text);
    put.category = Category::Preference;
    put.scope = MemoryScope::Declarative;
    put.owner = Owner {
        user_id: Some("ana".into()),
        agent_id: Some("planner".into()),
        session_id: Some("s-7".into()),
    };
    put.tags = vec!["travel".into(), "seat".into()];
    put.metadata.insert("dia_id".into(), json!("D3:4"));
    put.metadata
        .insert("n".into(), json!({"deep": [1, 2.5, null]}));
    put.importance = Some(0.8);
    put.source = Source::AgentLearned;
    put.confidence = Some(65);
    put.valid_from = Some(Timestamp::from_millis(1_700_000_000_000));
    put.valid_until = Some(Timestamp::from_millis(1_900_000_000_000));
    put.embedding_model = Some("test-model".into());
    put.context = Some("Which seat do you like?".into());
    let mut m = put.apply(None, Timestamp::from_millis(1_710_000_000_000));
    m.updated_at = Timestamp::from_millis(1_720_000_000_000);
    m.last_accessed_at = Some(Timestamp::from_millis(1_730_000_000_000));
    m.access_count = 9;
    m.version = 5;
    m.state = MemoryState::Superseded;
    m.superseded_by = Some(MemoryId::generate());
    m.expires_at = Some(Timestamp::now().plus(Duration::from_secs(86_400 * 365)));
    Record {
        memory: m,
        vector: Some(vec![0.6, 0.8]),
    }
}

fn by_id(m: &Memory) -> Locator {
    Locator::Id {
        tenant: m.partition.tenant.clone(),
        id: m.id,
    }
}

/// An imported record reads back with every field as it was (id, key, timestamps, version,
/// state, access statistics, expiry), by key, by id and in a listing, with its vector.
pub fn import_keeps_every_field(h: &dyn Harness) {
    let s = h.open();
    let p = part("imported");
    let r = full_record(&p, "seat", "Ana prefers the window seat");
    assert_eq!(s.import(vec![r.clone()]).unwrap(), 1);
    assert_eq!(s.get(&at(&p, "seat")).unwrap().as_ref(), Some(&r.memory));
    assert_eq!(s.get(&by_id(&r.memory)).unwrap().as_ref(), Some(&r.memory));
    assert_eq!(
        list_all(&*s, &p, &Filter::default()).unwrap(),
        vec![r.memory.clone()]
    );
    let v = s.vectors(&p, &Filter::default()).unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].id, v[0].model.as_str()), (r.memory.id, "test-model"));
    assert_eq!(Some(v[0].vector.clone()), r.vector);
    // A handle opened afterwards reads the same.
    let again = h.open();
    assert_eq!(again.get(&by_id(&r.memory)).unwrap(), Some(r.memory));
}

/// Importing the same records twice leaves the store as importing them once; importing a
/// newer copy of a record replaces it.
pub fn import_is_idempotent_by_id(h: &dyn Harness) {
    let s = h.open();
    let p = part("imported");
    let records: Vec<Record> = (0..5)
        .map(|i| {
            let mut r = full_record(&p, &format!("k{i}"), &format!("fact number {i}"));
            r.vector = (i % 2 == 0).then(|| vec![1.0, 0.0]);
            if r.vector.is_none() {
                r.memory.embedding_model = None;
            }
            r
        })
        .collect();
    assert_eq!(s.import(records.clone()).unwrap(), 5);
    let once = list_all(&*s, &p, &Filter::default()).unwrap();
    assert_eq!(s.import(records.clone()).unwrap(), 5);
    assert_eq!(list_all(&*s, &p, &Filter::default()).unwrap(), once);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 5);
    assert_eq!(s.vectors(&p, &Filter::default()).unwrap().len(), 3);
    let mut newer = records[1].clone();
    newer.memory.content = json!("fact number one, corrected");
    newer.memory.version = 6;
    s.import(vec![newer.clone()]).unwrap();
    assert_eq!(s.get(&by_id(&newer.memory)).unwrap(), Some(newer.memory));
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 5);
}

/// A record imported at a key that holds another record replaces it: the other id is gone.
pub fn import_replaces_the_record_at_its_key(h: &dyn Harness) {
    let s = h.open();
    let p = part("imported");
    let old = set(&*s, &p, "seat", "aisle");
    let r = full_record(&p, "seat", "window");
    s.import(vec![r.clone()]).unwrap();
    assert_eq!(s.get(&at(&p, "seat")).unwrap(), Some(r.memory));
    assert_eq!(s.get(&by_id(&old)).unwrap(), None);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
}

/// A record imported into another namespace of its tenant moves there: its id is in one
/// place only.
pub fn import_moves_an_id_between_namespaces(h: &dyn Harness) {
    let s = h.open();
    let (a, b) = (part("import-a"), part("import-b"));
    let r = full_record(&a, "seat", "window");
    s.import(vec![r.clone()]).unwrap();
    let mut moved = r.clone();
    moved.memory.partition = b.clone();
    s.import(vec![moved.clone()]).unwrap();
    assert_eq!(s.count(&a, &Filter::default()).unwrap(), 0);
    assert_eq!(s.count(&b, &Filter::default()).unwrap(), 1);
    assert_eq!(s.get(&by_id(&r.memory)).unwrap(), Some(moved.memory));
}

/// A batch with an invalid record writes nothing; expired records are skipped.
pub fn import_validates_and_skips_expired(h: &dyn Harness) {
    let s = h.open();
    let p = part("imported");
    let good = full_record(&p, "good", "a valid record");
    let mut bad = full_record(&p, "bad", "importance out of range");
    bad.memory.importance = 2.0;
    let err = s.import(vec![good.clone(), bad]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let mut orphan = full_record(&p, "orphan", "a vector without its model");
    orphan.memory.embedding_model = None;
    assert_eq!(
        s.import(vec![orphan]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 0);
    let mut expired = full_record(&p, "expired", "already gone");
    expired.memory.expires_at = Some(Timestamp::from_millis(1_000));
    assert_eq!(s.import(vec![expired, good.clone()]).unwrap(), 1);
    assert!(s.get(&at(&p, "expired")).unwrap().is_none());
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
}

/// Imported records are found by full-text and vector search, and filtered like any.
pub fn imported_records_are_searched(h: &dyn Harness) {
    let s = h.open();
    let p = part("imported");
    let mut a = full_record(&p, "a", "the staging database lives in Frankfurt");
    a.vector = Some(vec![1.0, 0.0]);
    let mut b = full_record(&p, "b", "Bob is allergic to peanuts");
    b.vector = Some(vec![0.0, 1.0]);
    b.memory.owner.user_id = Some("bob".into());
    s.import(vec![a.clone(), b.clone()]).unwrap();
    let hits = text_hits(&*s, &p, "staging database", Filter::default());
    assert_eq!(hits.first().map(|m| m.id), Some(a.memory.id));
    let near = s
        .vector_search(&VectorQuery {
            partition: p.clone(),
            filter: Filter::default(),
            vector: vec![0.0, 1.0],
            limit: 1,
        })
        .unwrap();
    assert_eq!(near.first().map(|h| h.id), Some(b.memory.id));
    let bob = Filter {
        user_id: Some("bob".into()),
        ..Filter::default()
    };
    assert_eq!(listed(&*s, &p, bob), vec!["b".to_owned()]);
}

/// `vectors_for` reads the vectors of the records given, in their order: `None` for a
/// record without one and for one that is gone.
pub fn vectors_for_reads_them_in_order(h: &dyn Harness) {
    let s = h.open();
    let p = part("imported");
    let mut a = full_record(&p, "a", "first");
    a.vector = Some(vec![1.0, 0.0]);
    let mut b = full_record(&p, "b", "second, without a vector");
    b.vector = None;
    b.memory.embedding_model = None;
    let mut c = full_record(&p, "c", "third");
    c.vector = Some(vec![0.0, 1.0]);
    s.import(vec![a.clone(), b.clone(), c.clone()]).unwrap();
    let gone = set(&*s, &p, "gone", "deleted below");
    assert!(s.delete(&at(&p, "gone")).unwrap());
    let records = vec![c.memory.clone(), gone, a.memory.clone(), b.memory.clone()];
    assert_eq!(
        s.vectors_for(&records).unwrap(),
        vec![c.vector, None, a.vector, None]
    );
}

/// A bulk load: while it runs, reads by user and by content hash and a write stay correct;
/// once it ends, what it imported is listed, filtered and searched like any record; an
/// error from the load comes back as it is and leaves the store working.
pub fn a_bulk_load_imports_and_stays_readable(h: &dyn Harness) {
    let s = h.open();
    let store = &*s;
    let p = part("bulk");
    let records: Vec<Record> = (0..50)
        .map(|i| {
            let mut r = full_record(&p, &format!("k{i}"), &format!("bulk fact number {i}"));
            if i % 2 == 0 {
                r.memory.owner.user_id = Some("bob".into());
            }
            r
        })
        .collect();
    let bob = || Filter {
        user_id: Some("bob".into()),
        ..Filter::default()
    };
    let hash = |text: &str| Filter {
        content_hash: Some(muisti_core::content_hash(text)),
        ..Filter::default()
    };
    let n = store
        .bulk_load(&mut || {
            let mut n = store.import(records[..25].to_vec())?;
            assert_eq!(list_all(store, &p, &bob())?.len(), 13);
            assert_eq!(listed(store, &p, hash("bulk fact number 3")), vec!["k3"]);
            set(store, &p, "during", "written while the load runs");
            n += store.import(records[25..].to_vec())?;
            Ok(n)
        })
        .unwrap();
    assert_eq!(n, 50);
    assert_eq!(store.count(&p, &Filter::default()).unwrap(), 51);
    assert_eq!(list_all(store, &p, &bob()).unwrap().len(), 25);
    assert_eq!(listed(store, &p, hash("bulk fact number 42")), vec!["k42"]);
    assert_eq!(
        listed(store, &p, hash("written while the load runs")),
        vec!["during"]
    );
    let hits = text_hits(store, &p, "number 37", Filter::default());
    assert_eq!(hits.first().map(|m| m.key.as_str()), Some("k37"));
    assert_eq!(
        store.get(&by_id(&records[7].memory)).unwrap().as_ref(),
        Some(&records[7].memory)
    );
    let err = store
        .bulk_load(&mut || Err(muisti_core::Error::invalid("load", "stopped")))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(list_all(store, &p, &bob()).unwrap().len(), 25);
}
