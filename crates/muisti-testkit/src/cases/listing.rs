//! Listing and counting with filters, paging, namespaces; the random filter property test.

use super::*;

fn seed_filtered(s: &dyn Store, p: &Partition) {
    let rows = [
        (
            "a",
            "u1",
            "s1",
            Category::Core,
            MemoryScope::LongTerm,
            vec!["x"],
            json!("red"),
        ),
        (
            "b",
            "u1",
            "s2",
            Category::Daily,
            MemoryScope::Episodic,
            vec!["x", "y"],
            json!("blue"),
        ),
        (
            "c",
            "u2",
            "s1",
            Category::Conversation,
            MemoryScope::ShortTerm,
            vec!["y"],
            json!("red"),
        ),
        (
            "d",
            "u2",
            "s2",
            Category::Custom("notes".into()),
            MemoryScope::Declarative,
            vec![],
            json!("green"),
        ),
    ];
    for (k, user, session, category, scope, tags, color) in rows {
        let mut put = Put::new(p.clone(), Some(key(k)), format!("memory {k}"))
            .with_category(category)
            .with_owner(Owner {
                user_id: Some(user.into()),
                agent_id: Some("agent".into()),
                session_id: Some(session.into()),
            });
        put.scope = scope;
        put.tags = tags.into_iter().map(String::from).collect();
        put.metadata.insert("color".into(), color);
        s.put(put).unwrap();
    }
}

/// A filter's tag finds the record's tag written in another case or with spaces around it
/// (`same_tag`), and only a whole tag.
pub fn list_matches_tags_regardless_of_case_and_spaces(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let mut put = Put::new(p.clone(), Some(key("trip")), "a week in Porto");
    put.tags = vec!["Travel".into(), " Food and Wine ".into()];
    s.put(put).unwrap();
    let mut put = Put::new(p.clone(), Some(key("other")), "a note");
    put.tags = vec!["travelling".into()];
    s.put(put).unwrap();
    let f = |tags: &[&str]| {
        listed(
            &*s,
            &p,
            Filter {
                tags: tags.iter().map(|t| t.to_string()).collect(),
                ..Default::default()
            },
        )
    };
    assert_eq!(f(&["travel"]), ["trip"]);
    assert_eq!(f(&["TRAVEL ", "food and wine"]), ["trip"]);
    assert_eq!(f(&["  Food and Wine"]), ["trip"]);
    assert_eq!(f(&["travelling"]), ["other"]);
    assert!(f(&["trav"]).is_empty(), "a part of a tag is not the tag");
    assert!(f(&["food"]).is_empty(), "a word of a tag is not the tag");
}

/// Listing filters by user, session, category, scope, tags and metadata, alone and together.
pub fn list_filters(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    seed_filtered(&*s, &p);
    let f = |f: Filter| listed(&*s, &p, f);
    assert_eq!(f(Filter::default()), ["a", "b", "c", "d"]);
    let user = |u: &str| Some(u.to_string());
    assert_eq!(
        f(Filter {
            user_id: user("u1"),
            ..Default::default()
        }),
        ["a", "b"]
    );
    assert_eq!(
        f(Filter {
            session_id: user("s1"),
            ..Default::default()
        }),
        ["a", "c"]
    );
    assert_eq!(
        f(Filter {
            user_id: user("u2"),
            session_id: user("s2"),
            ..Default::default()
        }),
        ["d"]
    );
    assert_eq!(
        f(Filter {
            agent_id: user("agent"),
            ..Default::default()
        })
        .len(),
        4
    );
    assert_eq!(
        f(Filter {
            agent_id: user("other"),
            ..Default::default()
        })
        .len(),
        0
    );
    assert_eq!(
        f(Filter {
            category: Some(Category::Daily),
            ..Default::default()
        }),
        ["b"]
    );
    assert_eq!(
        f(Filter {
            category: Some(Category::Custom("notes".into())),
            ..Default::default()
        }),
        ["d"]
    );
    assert_eq!(
        f(Filter {
            scope: Some(MemoryScope::ShortTerm),
            ..Default::default()
        }),
        ["c"]
    );
    assert_eq!(
        f(Filter {
            tags: vec!["x".into()],
            ..Default::default()
        }),
        ["a", "b"]
    );
    assert_eq!(
        f(Filter {
            tags: vec!["x".into(), "y".into()],
            ..Default::default()
        }),
        ["b"]
    );
    let mut md = serde_json::Map::new();
    md.insert("color".into(), json!("red"));
    assert_eq!(
        f(Filter {
            metadata: md.clone(),
            ..Default::default()
        }),
        ["a", "c"]
    );
    assert_eq!(
        f(Filter {
            metadata: md,
            user_id: user("u2"),
            ..Default::default()
        }),
        ["c"]
    );
    let future = Timestamp::now().plus(Duration::from_secs(3600));
    assert_eq!(
        f(Filter {
            created_after: Some(future),
            ..Default::default()
        })
        .len(),
        0
    );
    assert_eq!(
        f(Filter {
            created_before: Some(future),
            ..Default::default()
        })
        .len(),
        4
    );
}

/// Pages follow id order, never repeat or skip a record, and end with `next == None`.
pub fn list_pages_in_id_order(h: &dyn Harness) {
    let s = h.open();
    let p = part("paging");
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(set(&*s, &p, &format!("k{i:02}"), i).id);
    }
    let mut seen = Vec::new();
    let mut q = ListQuery {
        partition: p.clone(),
        limit: 10,
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = s.list(&q).unwrap();
        pages += 1;
        assert!(page.items.len() <= 10);
        seen.extend(page.items.iter().map(|m| m.id));
        match page.next {
            Some(n) => q.after = Some(n),
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ids);
}

/// `count` honours filters and skips expired records.
pub fn count_follows_filters_and_expiry(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    seed_filtered(&*s, &p);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 4);
    let f = Filter {
        user_id: Some("u1".into()),
        ..Default::default()
    };
    assert_eq!(s.count(&p, &f).unwrap(), 2);
    let f = Filter {
        tags: vec!["y".into()],
        ..Default::default()
    };
    assert_eq!(s.count(&p, &f).unwrap(), 2);
    s.put(
        Put::new(p.clone(), Some(key("short")), "x").with_ttl(Some(Ttl::new(SHORT_TTL).unwrap())),
    )
    .unwrap();
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 5);
    thread::sleep(PAST_SHORT_TTL);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 4);
}

/// `namespaces` lists the non-empty namespaces of a tenant, sorted.
pub fn namespaces_lists_non_empty(h: &dyn Harness) {
    let s = h.open();
    let t = Tenant::default();
    assert!(s.namespaces(&t).unwrap().is_empty());
    set(&*s, &part("zeta"), "k", 1);
    set(&*s, &part("alpha"), "k", 1);
    set(&*s, &part("mid:1"), "k", 1);
    assert_eq!(
        s.namespaces(&t).unwrap(),
        vec![ns("alpha"), ns("mid:1"), ns("zeta")]
    );
    s.flush(&part("zeta")).unwrap();
    assert_eq!(s.namespaces(&t).unwrap(), vec![ns("alpha"), ns("mid:1")]);
}

/// Random filters over random records: `list`, `count`, `text_search` and `vector_search`
/// return exactly the records [`Filter::matches`] (the reference definition) accepts.
pub fn filters_agree_with_the_reference(h: &dyn Harness) {
    let s = h.open();
    let p = part("filters");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let users = [None, Some("u1"), Some("u2")];
    let categories = [
        Category::Core,
        Category::Daily,
        Category::Custom("notes".into()),
    ];
    let scopes = [
        MemoryScope::LongTerm,
        MemoryScope::Episodic,
        MemoryScope::Declarative,
    ];
    let tags = ["a", "b", "c"];
    let contents = ["apple pie", "apple tart", "plum jam"];
    let mut records = Vec::new();
    for i in 0..60 {
        let mut put = Put::new(
            p.clone(),
            Some(key(&format!("r{i}"))),
            contents[next(contents.len())],
        );
        put.owner.user_id = users[next(3)].map(str::to_owned);
        put.owner.agent_id = users[next(3)].map(|u| format!("agent-{u}"));
        put.owner.session_id = users[next(3)].map(|u| format!("session-{u}"));
        put.category = categories[next(3)].clone();
        put.scope = scopes[next(3)];
        put.tags = tags
            .iter()
            .filter(|_| next(2) == 0)
            .map(|t| (*t).to_owned())
            .collect();
        if next(2) == 0 {
            put.metadata.insert("k".into(), json!(next(2)));
        }
        put.embedding_model = Some("test-model".into());
        let mut v = vec![1.0 + next(5) as f32, next(5) as f32];
        muisti_core::text::normalize(&mut v);
        put.embedding = Some(v);
        records.push(s.put(put).unwrap().memory);
        if i % 20 == 19 {
            thread::sleep(Duration::from_millis(3));
        }
    }
    let pick = |n: usize, next: &mut dyn FnMut(usize) -> usize| next(n + 1).checked_sub(1);
    for round in 0..80 {
        let mut f = Filter::default();
        if let Some(i) = pick(3, &mut next) {
            f.user_id = users[i].map(str::to_owned);
        }
        f.without_user = f.user_id.is_none() && next(3) == 0;
        if let Some(i) = pick(3, &mut next).filter(|_| next(2) == 0) {
            f.agent_id = users[i].map(|u| format!("agent-{u}"));
        }
        if let Some(i) = pick(3, &mut next).filter(|_| next(2) == 0) {
            f.session_id = users[i].map(|u| format!("session-{u}"));
        }
        if let Some(i) = pick(3, &mut next) {
            f.category = Some(categories[i].clone());
        }
        if let Some(i) = pick(3, &mut next) {
            f.scope = Some(scopes[i]);
        }
        f.tags = tags
            .iter()
            .filter(|_| next(3) == 0)
            .map(|t| (*t).to_owned())
            .collect();
        if next(3) == 0 {
            f.metadata.insert("k".into(), json!(next(2)));
        }
        if next(4) == 0 {
            f.created_after = Some(records[next(records.len())].created_at);
        }
        if next(4) == 0 {
            f.created_before = Some(records[next(records.len())].created_at);
        }
        if next(4) == 0 {
            f.content_hash = Some(muisti_core::content_hash(contents[next(contents.len())]));
        }
        let want: BTreeSet<MemoryId> = records
            .iter()
            .filter(|m| f.matches(m))
            .map(|m| m.id)
            .collect();
        let listed: BTreeSet<MemoryId> = list_all(&*s, &p, &f)
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(listed, want, "list, round {round}, {f:?}");
        assert_eq!(
            s.count(&p, &f).unwrap(),
            want.len() as u64,
            "count, round {round}, {f:?}"
        );
        let text: BTreeSet<MemoryId> = s
            .text_search(&TextQuery {
                partition: p.clone(),
                query: "apple".into(),
                filter: f.clone(),
                limit: 1000,
            })
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        let want_text: BTreeSet<MemoryId> = records
            .iter()
            .filter(|m| f.matches(m) && m.text().contains("apple"))
            .map(|m| m.id)
            .collect();
        assert_eq!(text, want_text, "text_search, round {round}, {f:?}");
        let near: BTreeSet<MemoryId> = s
            .vector_search(&muisti_core::VectorQuery {
                partition: p.clone(),
                vector: vec![1.0, 0.0],
                filter: f.clone(),
                limit: 1000,
            })
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(near, want, "vector_search, round {round}, {f:?}");
    }
}

/// `list_many` gives each query the page `list` gives it, in order: sessions' next turns
/// after a search (a backend with in-memory copies answers those from them), a query without
/// a session, and none at all.
pub fn list_many_answers_each_as_list(h: &dyn Harness) {
    let s = h.open();
    let p = part("many");
    let mut ids = Vec::new();
    for i in 0..12 {
        let mut put = Put::new(
            p.clone(),
            Some(key(&format!("t{i:02}"))),
            format!("turn {i} about apples"),
        );
        put.owner.user_id = Some("u1".into());
        put.owner.session_id = Some(format!("s{}", i % 3));
        ids.push(s.put(put).unwrap().memory.id);
    }
    s.text_search(&muisti_core::TextQuery {
        partition: p.clone(),
        query: "apples".into(),
        filter: Filter {
            user_id: Some("u1".into()),
            ..Default::default()
        },
        limit: 5,
    })
    .unwrap();
    let session_after = |i: usize| ListQuery {
        partition: p.clone(),
        filter: Filter {
            user_id: Some("u1".into()),
            session_id: Some(format!("s{}", i % 3)),
            ..Default::default()
        },
        after: Some(ids[i]),
        limit: 1,
    };
    let mut queries: Vec<ListQuery> = (0..12).map(session_after).collect();
    queries.push(ListQuery {
        partition: p.clone(),
        limit: 5,
        ..Default::default()
    });
    let many = s.list_many(&queries).unwrap();
    assert_eq!(many.len(), queries.len());
    let of = |page: &muisti_core::Page| page.items.iter().map(|m| m.id).collect::<Vec<_>>();
    for (q, page) in queries.iter().zip(&many) {
        let one = s.list(q).unwrap();
        assert_eq!(of(page), of(&one));
        assert_eq!(page.next, one.next);
    }
    // Turn i's session holds turn i + 3 next; the last three turns have none after them.
    for i in 0..9 {
        assert_eq!(of(&many[i]), vec![ids[i + 3]], "after turn {i}");
    }
    assert!(many[9..12].iter().all(|page| page.items.is_empty()));
    assert_eq!(of(&many[12]), ids[..5].to_vec());
    assert!(s.list_many(&[]).unwrap().is_empty());
}
