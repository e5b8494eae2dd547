//! Atomic, versioned updates, raced by threads.

use super::*;

fn by_id(m: &Memory) -> Locator {
    Locator::Id {
        tenant: m.partition.tenant.clone(),
        id: m.id,
    }
}

/// An update changes only the patched fields, keeps identity, creation time and access
/// statistics, moves the version up by one, and is found by full-text search under its new
/// text only; a replacing `put` moves the version too.
pub fn update_changes_fields_and_bumps_version(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let first = set(&*s, &p, "city", "I live in Lisbon");
    assert_eq!(first.version, 1);
    s.touch(&p.tenant, &[first.id], Timestamp::now()).unwrap();
    let patch = Patch {
        content: Some(json!("I live in Porto")),
        tags: Some(vec!["home".into()]),
        user_id: Some(Some("u2".into())),
        importance: Some(0.9),
        ..Patch::default()
    };
    let m = s.update(&UpdateRequest::new(by_id(&first), patch)).unwrap();
    assert_eq!(
        (m.id, m.key.clone(), m.created_at),
        (first.id, first.key.clone(), first.created_at)
    );
    assert_eq!(m.version, 2);
    assert_eq!(m.content, json!("I live in Porto"));
    assert_eq!(m.tags, ["home"]);
    assert_eq!(m.owner.user_id.as_deref(), Some("u2"));
    assert_eq!(m.importance, 0.9);
    assert_eq!(m.content_hash, muisti_core::content_hash("I live in Porto"));
    let stored = s.get(&at(&p, "city")).unwrap().unwrap();
    assert_eq!(stored, m.clone());
    assert_eq!(stored.access_count, 1);
    assert!(text_hits(&*s, &p, "porto", Filter::default()).len() == 1);
    assert!(text_hits(&*s, &p, "lisbon", Filter::default()).is_empty());
    let moved = Filter {
        user_id: Some("u2".into()),
        ..Filter::default()
    };
    assert_eq!(s.count(&p, &moved).unwrap(), 1);
    // By key, with the version just read.
    let m = s
        .update(
            &UpdateRequest::new(
                at(&p, "city"),
                Patch {
                    context: Some(Some("asked where I live".into())),
                    ..Patch::default()
                },
            )
            .expecting(Some(2)),
        )
        .unwrap();
    assert_eq!(m.version, 3);
    assert_eq!(m.content, json!("I live in Porto"));
    let replaced = set(&*s, &p, "city", "I live in Faro");
    assert_eq!((replaced.id, replaced.version), (first.id, 4));
}

/// A stale expected version is a conflict; a missing, expired or other tenant's record is
/// not found; an invalid patch is invalid input. None of them changes anything.
pub fn update_refusals_change_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = set(&*s, &p, "k", "original");
    let patch = Patch {
        content: Some(json!("changed")),
        ..Patch::default()
    };
    let v2 = s
        .update(&UpdateRequest::new(by_id(&m), patch.clone()).expecting(Some(1)))
        .unwrap();
    assert_eq!(v2.version, 2);
    let stale = s.update(
        &UpdateRequest::new(
            by_id(&m),
            Patch {
                content: Some(json!("lost")),
                ..Patch::default()
            },
        )
        .expecting(Some(1)),
    );
    assert_eq!(stale.unwrap_err().kind(), ErrorKind::Conflict);
    let bad = s.update(&UpdateRequest::new(
        by_id(&m),
        Patch {
            importance: Some(2.0),
            ..Patch::default()
        },
    ));
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidInput);
    let self_superseding = s.update(&UpdateRequest::new(
        by_id(&m),
        Patch {
            state: Some(muisti_core::MemoryState::Superseded),
            ..Patch::default()
        },
    ));
    assert_eq!(
        self_superseding.unwrap_err().kind(),
        ErrorKind::ConflictingFields
    );
    let stored = s.get(&by_id(&m)).unwrap().unwrap();
    assert_eq!((stored.content, stored.version), (json!("changed"), 2));
    let other = Locator::Id {
        tenant: Tenant::new("other").unwrap(),
        id: m.id,
    };
    let missing = s.update(&UpdateRequest::new(other, patch.clone()));
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    let missing = s.update(&UpdateRequest::new(at(&p, "nothing here"), patch.clone()));
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    let expired = s
        .put(
            Put::new(p.clone(), Some(key("gone")), "short-lived")
                .with_ttl(Some(Ttl::new(SHORT_TTL).unwrap())),
        )
        .unwrap()
        .memory;
    thread::sleep(PAST_SHORT_TTL);
    let gone = s.update(&UpdateRequest::new(by_id(&expired), patch));
    assert_eq!(gone.unwrap_err().kind(), ErrorKind::NotFound);
    assert!(s.get(&at(&p, "gone")).unwrap().is_none());
}

/// State changes: superseded names its successor; back to active clears it; archived
/// records stay readable by id. A TTL given by an update counts from the update.
pub fn update_moves_state_and_expiry(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let old = set(&*s, &p, "old", "I live in Lisbon");
    let new = set(&*s, &p, "new", "I live in Porto");
    let m = s
        .update(&UpdateRequest::new(
            by_id(&old),
            Patch {
                state: Some(muisti_core::MemoryState::Superseded),
                superseded_by: Some(new.id),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(m.state, muisti_core::MemoryState::Superseded);
    assert_eq!(m.superseded_by, Some(new.id));
    assert_eq!(
        s.get(&by_id(&old)).unwrap().unwrap().superseded_by,
        Some(new.id)
    );
    let m = s
        .update(&UpdateRequest::new(
            by_id(&old),
            Patch {
                state: Some(muisti_core::MemoryState::Archived),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(
        (m.state, m.superseded_by),
        (muisti_core::MemoryState::Archived, None)
    );
    // Fields that contradict each other or the record: refused, nothing changes.
    for patch in [
        Patch {
            state: Some(muisti_core::MemoryState::Superseded),
            ..Patch::default()
        },
        Patch {
            state: Some(muisti_core::MemoryState::Active),
            superseded_by: Some(new.id),
            ..Patch::default()
        },
        Patch {
            superseded_by: Some(old.id),
            ..Patch::default()
        },
        Patch {
            valid_from: Some(Some(muisti_core::Timestamp::from_millis(2_000))),
            valid_until: Some(Some(muisti_core::Timestamp::from_millis(1_000))),
            ..Patch::default()
        },
    ] {
        let err = s
            .update(&UpdateRequest::new(by_id(&old), patch.clone()))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConflictingFields, "{patch:?}");
    }
    assert_eq!(s.get(&by_id(&old)).unwrap().unwrap().version, m.version);
    // A successor alone makes the record superseded.
    let m = s
        .update(&UpdateRequest::new(
            by_id(&old),
            Patch {
                superseded_by: Some(new.id),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(
        (m.state, m.superseded_by),
        (muisti_core::MemoryState::Superseded, Some(new.id))
    );
    let m = s
        .update(&UpdateRequest::new(
            by_id(&new),
            Patch {
                ttl: Some(Some(Ttl::new(SHORT_TTL).unwrap())),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert!(m.expires_at.is_some());
    thread::sleep(PAST_SHORT_TTL);
    assert!(s.get(&by_id(&new)).unwrap().is_none());
    assert!(s.get(&by_id(&old)).unwrap().is_some());
}

/// An update that leaves the text alone keeps the vector; one that changes the text drops
/// it unless it brings a new one.
pub fn update_vectors_follow_the_text(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = put_vec(&*s, &p, "a", "alpha text", &[1.0, 0.0]);
    let vector_of = |s: &dyn Store| {
        s.vectors(&p, &Filter::default())
            .unwrap()
            .into_iter()
            .find(|v| v.id == m.id)
            .map(|v| v.vector)
    };
    s.update(&UpdateRequest::new(
        by_id(&m),
        Patch {
            importance: Some(0.7),
            ..Patch::default()
        },
    ))
    .unwrap();
    assert_eq!(vector_of(&*s), Some(vec![1.0, 0.0]));
    let u = s
        .update(&UpdateRequest::new(
            by_id(&m),
            Patch {
                content: Some(json!("beta text")),
                embedding: Some(("test-model".into(), vec![0.0, 1.0])),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(u.embedding_model.as_deref(), Some("test-model"));
    assert_eq!(vector_of(&*s), Some(vec![0.0, 1.0]));
    let u = s
        .update(&UpdateRequest::new(
            by_id(&m),
            Patch {
                content: Some(json!("gamma text")),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(u.embedding_model, None);
    assert_eq!(vector_of(&*s), None);
}

/// Two threads race conditional updates on one record: exactly one wins per version, so
/// every increment is counted and the version counts every write.
pub fn racing_conditional_updates_lose_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("race");
    set(&*s, &p, "counter", 0);
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let s = Arc::clone(&s);
            let p = p.clone();
            thread::spawn(move || (0..INCREMENTS).map(|_| increment(&*s, &p)).sum::<usize>())
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let m = s.get(&at(&p, "counter")).unwrap().unwrap();
    assert_eq!(m.content, json!(2 * INCREMENTS));
    assert_eq!(m.version, 1 + 2 * INCREMENTS as u64);
}

/// A batch of updates applies each as `update` would, with its own outcome: a stale
/// version or a missing record fails alone and changes nothing, the others are written.
pub fn update_many_gives_each_update_its_own_outcome(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", "I live in Lisbon");
    let b = set(&*s, &p, "b", "I like tea");
    let c = set(&*s, &p, "c", "I drive a van");
    assert!(s.update_many(&[]).unwrap().is_empty());
    let patch = |content: &str| Patch {
        content: Some(json!(content)),
        ..Patch::default()
    };
    let missing = Locator::Id {
        tenant: p.tenant.clone(),
        id: MemoryId::generate(),
    };
    let out = s
        .update_many(&[
            UpdateRequest::new(by_id(&a), patch("I live in Porto")).expecting(Some(a.version)),
            UpdateRequest::new(by_id(&b), patch("I like coffee")).expecting(Some(b.version + 1)),
            UpdateRequest::new(missing, patch("nobody")),
            UpdateRequest::new(by_id(&c), patch("I drive a bus")),
        ])
        .unwrap();
    let kinds: Vec<Option<ErrorKind>> = out
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(ErrorKind::Conflict),
            Some(ErrorKind::NotFound),
            None
        ]
    );
    let written: Vec<Memory> = out.into_iter().filter_map(Result::ok).collect();
    assert_eq!(
        s.get_many(&p.tenant, &[a.id, b.id, c.id]).unwrap(),
        [written[0].clone(), b.clone(), written[1].clone()]
    );
    assert_eq!((written[0].version, written[1].version), (2, 2));
    assert_eq!(text_hits(&*s, &p, "porto bus", Filter::default()).len(), 2);
    assert!(text_hits(&*s, &p, "lisbon van coffee", Filter::default()).is_empty());
}

/// Two updates of one record in one batch apply in order: the second sees the first.
pub fn update_many_applies_updates_of_one_record_in_order(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", "I live in Lisbon");
    let patch = |content: &str| Patch {
        content: Some(json!(content)),
        ..Patch::default()
    };
    let out = s
        .update_many(&[
            UpdateRequest::new(by_id(&a), patch("I live in Porto")).expecting(Some(a.version)),
            UpdateRequest::new(by_id(&a), patch("I live in Faro")).expecting(Some(a.version + 1)),
        ])
        .unwrap();
    let versions: Vec<u64> = out.into_iter().map(|r| r.unwrap().version).collect();
    assert_eq!(versions, [a.version + 1, a.version + 2]);
    let now = s.get(&by_id(&a)).unwrap().unwrap();
    assert_eq!(now.content, json!("I live in Faro"));
    assert_eq!(text_hits(&*s, &p, "faro", Filter::default()).len(), 1);
    assert!(text_hits(&*s, &p, "porto lisbon", Filter::default()).is_empty());
}

/// A batch larger than a backend's transaction chunk (Redis's 500), its records addressed
/// by key and by id: every update applied once, each record's vector kept where the text
/// did not change, and the records' text found again by full text.
pub fn update_many_of_many_records_keeps_their_vectors(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    const N: usize = 1_200;
    let made: Vec<Memory> = (0..N)
        .map(|i| {
            let mut v = vec![0.0; 8];
            v[i % 8] = 1.0;
            v[(i / 8) % 8] += 0.5;
            search::put_vec(&*s, &p, &format!("k{i}"), &format!("note number {i}"), &v)
        })
        .collect();
    let reqs: Vec<UpdateRequest> = made
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let at = if i % 2 == 0 {
                by_id(m)
            } else {
                at(&p, m.key.as_str())
            };
            let patch = Patch {
                importance: Some(0.25),
                tags: Some(vec![format!("t{}", i % 3)]),
                ..Patch::default()
            };
            UpdateRequest::new(at, patch).expecting(Some(m.version))
        })
        .collect();
    let out = s.update_many(&reqs).unwrap();
    assert_eq!(out.len(), N);
    for (r, m) in out.iter().zip(&made) {
        let u = r.as_ref().expect("each update applies");
        assert_eq!((u.id, u.version, u.importance), (m.id, m.version + 1, 0.25));
    }
    let stored = s
        .get_many(&p.tenant, &made.iter().map(|m| m.id).collect::<Vec<_>>())
        .unwrap();
    let written: Vec<Memory> = out.into_iter().map(Result::unwrap).collect();
    assert_eq!(stored, written);
    let vectors = s.vectors(&p, &Filter::default()).unwrap();
    assert_eq!(vectors.len(), N, "every record keeps its vector");
    // Record 5's vector: 1 at 5, and 0.5 at 5 / 8 = 0.
    let mut expected = vec![0.0; 8];
    expected[5] = 1.0;
    expected[0] += 0.5;
    muisti_core::text::normalize(&mut expected);
    let hits = s
        .vector_search(&muisti_core::VectorQuery {
            partition: p.clone(),
            vector: expected,
            filter: Filter::default(),
            limit: 1,
        })
        .unwrap();
    // Some backends keep vectors quantised: the same direction within their rounding.
    assert!((hits[0].score - 1.0).abs() < 0.01, "{hits:?}");
    assert_eq!(
        text_hits(&*s, &p, "number 777", Filter::default())[0].id,
        made[777].id
    );
}

/// An update that leaves the text, the owner and the hash alone (a promotion, a fold's
/// metadata and accesses) keeps the record found by its words, its user and its hash, and
/// counts each access once: in a read, in a user's search and in a handle opened afterwards
/// (which reads what the store kept for the user's recall, not this handle's copies).
pub fn an_update_of_a_few_fields_keeps_the_rest(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let mut put = Put::new(p.clone(), Some(key("bees")), "I keep bees on the roof");
    put.owner.user_id = Some("u1".into());
    put.tags = vec!["hobby".into()];
    let first = s.put(put).unwrap().memory;
    let user = Filter {
        user_id: Some("u1".into()),
        ..Filter::default()
    };
    // The user's copy is loaded before the changes, as recall would have it.
    assert_eq!(text_hits(&*s, &p, "bees", user.clone()).len(), 1);
    let t = Timestamp::now();
    s.touch(&p.tenant, &[first.id, first.id], t).unwrap();
    let mut metadata = first.metadata.clone();
    metadata.insert("promoted_at_access".into(), json!(2));
    let promoted = s
        .update(
            &UpdateRequest::new(
                by_id(&first),
                Patch {
                    importance: Some(0.8),
                    metadata: Some(metadata),
                    ..Patch::default()
                },
            )
            .expecting(Some(first.version)),
        )
        .unwrap();
    assert_eq!((promoted.access_count, promoted.version), (2, 2));
    s.touch(&p.tenant, &[first.id], t).unwrap();
    let folded = s
        .update(&UpdateRequest::new(
            by_id(&first),
            Patch {
                tags: Some(vec!["hobby".into(), "garden".into()]),
                add_access: Some(4),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(folded.access_count, 7, "2 + 1 touched, 4 folded in");
    let same_hash = Filter {
        user_id: Some("u1".into()),
        content_hash: Some(first.content_hash.clone()),
        ..Filter::default()
    };
    for handle in [s.clone(), h.open()] {
        let got = handle.get(&at(&p, "bees")).unwrap().unwrap();
        assert_eq!(got, folded);
        assert_eq!(got.metadata["promoted_at_access"], json!(2));
        assert!((got.importance - 0.8).abs() < 1e-6);
        let hits = text_hits(&*handle, &p, "bees", user.clone());
        assert_eq!(hits, std::slice::from_ref(&folded));
        assert_eq!(handle.count(&p, &same_hash).unwrap(), 1);
        let ranked = handle.rank_fields(&p, &[first.id]).unwrap();
        assert_eq!(ranked[0].access_count, 7);
    }
    handle_accesses_once_more(&*s, &p, first.id, 8);
}

/// Touches `id` once and checks its count reads `want` through a read and a user's search.
fn handle_accesses_once_more(s: &dyn Store, p: &Partition, id: MemoryId, want: u64) {
    s.touch(&p.tenant, &[id], Timestamp::now()).unwrap();
    let user = Filter {
        user_id: Some("u1".into()),
        ..Filter::default()
    };
    assert_eq!(s.get_many(&p.tenant, &[id]).unwrap()[0].access_count, want);
    assert_eq!(text_hits(s, p, "bees", user)[0].access_count, want);
}
