//! Full-text and vector search, stored vectors and the rescoring fields.

use super::*;

/// The seed's example: shared words of three or more letters rank; the key never matches.
pub fn search_ranks_by_token_overlap(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    set(&*s, &p, "customer_tier", "gold tier customer");
    set(
        &*s,
        &p,
        "discount_rule",
        "gold customer discount is 10 percent",
    );
    set(&*s, &p, "preferred_language", "French language preferred");
    let all = muisti_core::list_all(&*s, &p, &Filter::default()).unwrap();
    let hits = muisti_core::rank::token_overlap(
        all.clone(),
        "What discount do I get for my customer tier?",
        3,
    );
    let keys: BTreeSet<_> = hits.iter().map(|h| h.memory.key.to_string()).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["customer_tier".to_string(), "discount_rule".to_string()])
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    let hits = muisti_core::rank::token_overlap(all, "preferred", 1);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].memory.key, key("preferred_language"));
}

/// Search never returns a record from another namespace, tenant, or outside the filter.
pub fn search_is_confined_to_partition_and_filter(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let other_ns = part("conversations");
    let other_tenant = Partition::new(Tenant::new("other").unwrap(), ns("default"));
    set(&*s, &other_ns, "c", "lisbon apartment");
    set(&*s, &other_tenant, "t", "lisbon apartment");
    let mut put = Put::new(p.clone(), Some(key("mine")), "lisbon apartment");
    put.owner.user_id = Some("u1".into());
    s.put(put).unwrap();
    let mut put = Put::new(p.clone(), Some(key("theirs")), "lisbon apartment");
    put.owner.user_id = Some("u2".into());
    s.put(put).unwrap();
    let filter = Filter {
        user_id: Some("u1".into()),
        ..Default::default()
    };
    let hits = text_hits(&*s, &p, "lisbon apartment", filter);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].key, key("mine"));
    assert_eq!(hits[0].partition, p);
}

pub(super) fn put_vec(s: &dyn Store, p: &Partition, k: &str, text: &str, v: &[f32]) -> Memory {
    let mut put = Put::new(p.clone(), Some(key(k)), text);
    put.embedding_model = Some("test-model".into());
    let mut v = v.to_vec();
    muisti_core::text::normalize(&mut v);
    put.embedding = Some(v);
    s.put(put).unwrap().memory
}

/// Vectors are stored beside their records, replaced and removed with them, and filtered
/// like them.
pub fn vectors_follow_their_records(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = put_vec(&*s, &p, "a", "alpha", &[1.0, 0.0, 0.0, 0.0]);
    let b = put_vec(&*s, &p, "b", "beta", &[0.0, 1.0, 0.0, 0.0]);
    put_vec(&*s, &part("other"), "c", "gamma", &[0.0, 0.0, 1.0, 0.0]);
    set(&*s, &p, "plain", "no vector");
    let mut got = s.vectors(&p, &Filter::default()).unwrap();
    got.sort_by_key(|v| v.id);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].id, got[1].id), (a.id, b.id));
    assert_eq!(got[0].model, "test-model");
    assert_eq!(got[0].vector, vec![1.0, 0.0, 0.0, 0.0]);
    // The record itself does not carry the vector.
    assert_eq!(a.embedding_model.as_deref(), Some("test-model"));
    // Replacing without a vector drops it; deleting drops it.
    s.put(Put::new(p.clone(), Some(key("a")), "alpha, no vector"))
        .unwrap();
    assert!(s.delete(&at(&p, "b")).unwrap());
    assert!(s.vectors(&p, &Filter::default()).unwrap().is_empty());
    // Filters apply, and an expired record's vector is gone with it.
    let mut put = Put::new(p.clone(), Some(key("u1")), "user one");
    put.owner.user_id = Some("u1".into());
    put.embedding_model = Some("test-model".into());
    put.embedding = Some(vec![0.0, 0.0, 0.0, 1.0]);
    s.put(put).unwrap();
    let mut put = Put::new(p.clone(), Some(key("brief")), "short lived");
    put.embedding_model = Some("test-model".into());
    put.embedding = Some(vec![0.0, 0.0, 1.0, 0.0]);
    put.ttl = Some(Ttl::new(SHORT_TTL).unwrap());
    s.put(put).unwrap();
    let only_u1 = Filter {
        user_id: Some("u1".into()),
        ..Default::default()
    };
    assert_eq!(s.vectors(&p, &only_u1).unwrap().len(), 1);
    assert_eq!(s.vectors(&p, &Filter::default()).unwrap().len(), 2);
    thread::sleep(PAST_SHORT_TTL);
    assert_eq!(s.vectors(&p, &Filter::default()).unwrap().len(), 1);
    // A vector without the id of its model is refused.
    let mut bad = Put::new(p.clone(), Some(key("x")), "x");
    bad.embedding = Some(vec![1.0]);
    assert_eq!(s.put(bad).unwrap_err().kind(), ErrorKind::InvalidInput);
}

/// Nearest neighbours by dot product, within the partition and filter.
pub fn vector_search_finds_nearest(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let east = put_vec(&*s, &p, "east", "e", &[1.0, 0.1, 0.0]);
    let north = put_vec(&*s, &p, "north", "n", &[0.1, 1.0, 0.0]);
    put_vec(&*s, &p, "up", "u", &[0.0, 0.1, 1.0]);
    put_vec(&*s, &part("elsewhere"), "east2", "e", &[1.0, 0.0, 0.0]);
    let mut q = vec![0.9, 0.3, 0.0];
    muisti_core::text::normalize(&mut q);
    let hits = s
        .vector_search(&muisti_core::VectorQuery {
            partition: p.clone(),
            vector: q,
            filter: Filter::default(),
            limit: 2,
        })
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        [east.id, north.id]
    );
    assert!(hits[0].score > hits[1].score && hits[0].score <= 1.0001);
}

/// BM25 over key and content: rare shared words rank first, a key names what its value is
/// about, and nothing crosses partitions or filters.
pub fn text_search_ranks_by_bm25(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let tier = set(&*s, &p, "customer_tier", "gold");
    let rule = set(
        &*s,
        &p,
        "discount_rule",
        "gold customer discount is 10 percent",
    );
    set(&*s, &p, "preferred_language", "French language preferred");
    let moved = s
        .put(Put::new(p.clone(), None, "I moved to Lisbon in March"))
        .unwrap()
        .memory;
    set(
        &*s,
        &part("conversations"),
        "c",
        "discount customer tier lisbon",
    );
    let search = |q: &str, limit: usize, filter: Filter| {
        s.text_search(&muisti_core::TextQuery {
            partition: p.clone(),
            query: q.into(),
            filter,
            limit,
        })
        .unwrap()
    };
    let hits = search(
        "What discount do we get for our customer tier?",
        5,
        Filter::default(),
    );
    let ids: Vec<_> = hits.iter().map(|h| h.id).collect();
    assert_eq!(ids.len(), 2, "{hits:?}");
    assert!(ids.contains(&tier.id) && ids.contains(&rule.id));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    let hits = search("lisbon", 5, Filter::default());
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [moved.id]);
    assert!(search("", 5, Filter::default()).is_empty());
    assert!(search("?!", 5, Filter::default()).is_empty());
    let none = Filter {
        user_id: Some("nobody".into()),
        ..Default::default()
    };
    assert!(search("lisbon", 5, none).is_empty());
    let tagged = Filter {
        tags: vec!["missing".into()],
        ..Default::default()
    };
    assert!(search("lisbon", 5, tagged).is_empty());
    // Deleted and replaced records leave the index.
    s.delete(&Locator::Id {
        tenant: p.tenant.clone(),
        id: moved.id,
    })
    .unwrap();
    assert!(search("lisbon", 5, Filter::default()).is_empty());
    set(&*s, &p, "customer_tier", "platinum");
    assert!(
        search("gold", 5, Filter::default())
            .iter()
            .all(|h| h.id != tier.id)
    );
    assert_eq!(search("platinum", 5, Filter::default())[0].id, tier.id);
    s.flush(&p).unwrap();
    assert!(search("discount", 5, Filter::default()).is_empty());
}

/// A memory's context is searchable, at a lower weight than content.
pub fn text_search_reads_context(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let mut answer = Put::new(p.clone(), None, "Five years already!");
    answer.context = Some("How long have you been married?".into());
    let answer = s.put(answer).unwrap().memory;
    let stated = s
        .put(Put::new(p.clone(), None, "We married in spring"))
        .unwrap()
        .memory;
    let search = |q: &str| {
        s.text_search(&muisti_core::TextQuery {
            partition: p.clone(),
            query: q.into(),
            filter: Filter::default(),
            limit: 5,
        })
        .unwrap()
        .iter()
        .map(|h| h.id)
        .collect::<Vec<_>>()
    };
    assert_eq!(search("how long"), [answer.id]);
    assert_eq!(
        search("married"),
        [stated.id, answer.id],
        "content outweighs context"
    );
}

/// `tenants` lists tenants with live records; `set_vectors` replaces vectors of existing
/// records only, leaving everything else (`updated_at` included) as it was.
pub fn tenants_and_set_vectors(h: &dyn Harness) {
    let s = h.open();
    let t1 = Partition::new(Tenant::new("t1").unwrap(), ns("default"));
    let t2 = Partition::new(Tenant::new("t2").unwrap(), ns("other"));
    assert!(s.tenants().unwrap().is_empty());
    let a = put_vec(&*s, &t1, "a", "alpha", &[1.0, 0.0]);
    set(&*s, &t2, "b", "beta");
    assert_eq!(
        s.tenants().unwrap(),
        vec![Tenant::new("t1").unwrap(), Tenant::new("t2").unwrap()]
    );
    let v = muisti_core::StoredVector {
        id: a.id,
        model: "model-2".into(),
        vector: vec![0.0, 1.0],
    };
    let foreign = muisti_core::StoredVector {
        id: muisti_core::MemoryId::generate(),
        model: "model-2".into(),
        vector: vec![1.0, 1.0],
    };
    // Another tenant's id is not touched.
    assert_eq!(
        s.set_vectors(&t2.tenant, std::slice::from_ref(&v)).unwrap(),
        0
    );
    assert_eq!(s.set_vectors(&t1.tenant, &[v.clone(), foreign]).unwrap(), 1);
    let got = s.vectors(&t1, &Filter::default()).unwrap();
    assert_eq!(got, vec![v]);
    let after = s.get(&at(&t1, "a")).unwrap().unwrap();
    assert_eq!(after.embedding_model.as_deref(), Some("model-2"));
    assert_eq!(after.updated_at, a.updated_at);
    assert_eq!(after.content, a.content);
    s.flush(&t2).unwrap();
    assert_eq!(s.tenants().unwrap(), vec![Tenant::new("t1").unwrap()]);
}

// ---- atomic updates ----

/// Full-text scores use the statistics of the records the query may return (its partition,
/// after its filter), whatever the filter: they equal the reference BM25 over exactly those
/// records, and another tenant's or namespace's data changes none of them.
pub fn text_scores_ignore_other_partitions(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let mut hash = String::new();
    for (i, text) in [
        "the gold customer discount is ten percent",
        "gold members get free shipping on every order",
        "our customer support answers in French",
        "discount codes expire after thirty days",
        "shipping to Lisbon takes three days",
    ]
    .iter()
    .enumerate()
    {
        let mut put = Put::new(p.clone(), None, *text);
        put.tags = if i % 2 == 0 {
            vec!["billing".into()]
        } else {
            vec!["billing".into(), "logistics".into()]
        };
        put.metadata = json!({"team": if i < 3 { "sales" } else { "ops" }})
            .as_object()
            .cloned()
            .unwrap();
        put.owner.user_id = Some(if i < 4 { "ana" } else { "ben" }.into());
        let m = s.put(put).unwrap().memory;
        if i == 1 {
            hash = m.content_hash.clone();
        }
    }
    let filters = [
        Filter::default(),
        Filter {
            tags: vec!["logistics".into()],
            ..Filter::default()
        },
        Filter {
            metadata: json!({"team": "sales"}).as_object().cloned().unwrap(),
            ..Filter::default()
        },
        Filter {
            content_hash: Some(hash),
            ..Filter::default()
        },
        Filter {
            user_id: Some("ana".into()),
            tags: vec!["billing".into()],
            ..Filter::default()
        },
    ];
    let query = "gold customer discount shipping";
    let scores = |s: &dyn Store| -> Vec<Vec<(MemoryId, f32)>> {
        filters
            .iter()
            .map(|f| {
                s.text_search(&TextQuery {
                    partition: p.clone(),
                    query: query.into(),
                    filter: f.clone(),
                    limit: 10,
                })
                .unwrap()
                .into_iter()
                .map(|h| (h.id, h.score))
                .collect()
            })
            .collect()
    };
    let before = scores(&*s);
    for (f, got) in filters.iter().zip(&before) {
        let records = list_all(&*s, &p, f).unwrap();
        let want = crate::bm25_reference(&records, query, 10);
        assert_eq!(got.len(), want.len(), "{f:?}: {got:?} vs {want:?}");
        for ((id, score), w) in got.iter().zip(&want) {
            assert!(
                (score - w.score).abs() <= 1e-4 * w.score.abs().max(1.0),
                "{f:?}: {id} scored {score}, the reference {} ({})",
                w.score,
                w.id
            );
        }
    }
    // Much more of the same words elsewhere: another tenant, another namespace.
    let elsewhere = [
        Partition::new(Tenant::new("other-tenant").unwrap(), ns("default")),
        part("elsewhere"),
    ];
    for q in &elsewhere {
        let puts: Vec<Put> = (0..40)
            .map(|i| {
                let mut put = Put::new(
                    q.clone(),
                    None,
                    format!("gold customer discount {i} shipping shipping"),
                );
                put.tags = vec!["billing".into(), "logistics".into()];
                put.owner.user_id = Some("ana".into());
                put
            })
            .collect();
        s.put_many(puts).unwrap();
    }
    assert_eq!(scores(&*s), before, "other partitions changed a score");
}

/// `rank_fields` answers what the records hold (after accesses, updates, replacement and
/// deletion), in the order asked, for live records of the partition only.
pub fn rank_fields_follow_the_records(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", "alpha");
    let b = set(&*s, &p, "b", "beta");
    let c = set(&*s, &p, "c", "gamma");
    let other = set(&*s, &part("elsewhere"), "d", "delta");
    let ids = [c.id, a.id, b.id, other.id, MemoryId::generate()];
    // Load whatever a backend keeps in memory, then change the records under it.
    s.text_search(&TextQuery {
        partition: p.clone(),
        query: "alpha".into(),
        filter: Filter::default(),
        limit: 5,
    })
    .unwrap();
    s.rank_fields(&p, &ids).unwrap();
    let t = Timestamp::now();
    s.touch(&p.tenant, &[a.id, a.id, b.id], t).unwrap();
    let patch = Patch {
        importance: Some(0.9),
        ..Patch::default()
    };
    s.update(&UpdateRequest::new(at(&p, "b"), patch)).unwrap();
    s.delete(&at(&p, "c")).unwrap();
    let want: Vec<muisti_core::RankFields> = s
        .get_many(&p.tenant, &[a.id, b.id])
        .unwrap()
        .iter()
        .map(muisti_core::RankFields::of)
        .collect();
    assert_eq!(want[0].access_count, 2);
    assert_eq!(want[1].access_count, 1);
    assert!((want[1].importance - 0.9).abs() < 1e-6);
    assert_eq!(s.rank_fields(&p, &ids).unwrap(), want);
    s.touch(&p.tenant, &[b.id], t).unwrap();
    assert_eq!(s.rank_fields(&p, &[b.id]).unwrap()[0].access_count, 2);
}
