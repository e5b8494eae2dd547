//! Conversations as messages, through the engine on every backend it is given.

use muisti::{
    Owner,
    conversation::{CONVERSATIONS_NAMESPACE, NewMessage},
};
use serde_json::json;

use super::{ns, on_each_backend};

fn said(role: &str, text: &str) -> NewMessage {
    NewMessage {
        role: role.into(),
        content: text.into(),
        ..NewMessage::default()
    }
}

fn ada() -> Owner {
    Owner {
        user_id: Some("ada".into()),
        ..Owner::default()
    }
}

#[test]
fn a_turn_appends_its_messages_and_reads_come_back_in_order() {
    on_each_backend(|url, engine| {
        let id = "01JDEMO000000000000000000A";
        for turn in 0..3 {
            let stored = engine
                .conversations()
                .append(
                    id,
                    &ada(),
                    vec![
                        said("user", &format!("question {turn}")),
                        said("assistant", &format!("answer {turn}")),
                    ],
                )
                .expect("append");
            assert_eq!(stored[0].seq, turn * 2, "{url}");
        }
        let messages = engine.conversations().messages(id).expect("read");
        let texts: Vec<_> = messages
            .iter()
            .map(|m| m.message.content.as_str())
            .collect();
        assert_eq!(
            texts,
            [
                "question 0",
                "answer 0",
                "question 1",
                "answer 1",
                "question 2",
                "answer 2"
            ],
            "{url}"
        );
        assert_eq!(messages[1].message.role, "assistant");
        let info = engine
            .conversations()
            .info(id)
            .expect("info")
            .expect("exists");
        assert_eq!(info.messages, 6, "{url}");
        assert_eq!(info.user_id.as_deref(), Some("ada"));
        assert_eq!(
            engine
                .conversations()
                .list(Some("ada"))
                .expect("list")
                .len(),
            1
        );
        assert!(
            engine
                .conversations()
                .list(Some("bob"))
                .expect("list")
                .is_empty()
        );
        // Each message is its own record, owned by the conversation's session.
        let records = engine
            .count(
                &ns("messages"),
                &muisti::Filter {
                    session_id: Some(id.into()),
                    ..muisti::Filter::default()
                },
            )
            .expect("count");
        assert_eq!(records, 6, "{url}");
        assert_eq!(
            engine.conversations().delete(id).expect("delete"),
            7,
            "{url}"
        );
        assert!(engine.conversations().info(id).expect("info").is_none());
        assert!(
            engine
                .conversations()
                .messages(id)
                .expect("read")
                .is_empty()
        );
    });
}

/// Two writers appending at once (each from the same stale count) both keep their messages.
#[test]
fn appends_racing_on_one_conversation_lose_nothing() {
    on_each_backend(|url, engine| {
        let id = "01JDEMO000000000000000000B";
        std::thread::scope(|s| {
            for w in 0..4 {
                let engine = engine.clone();
                s.spawn(move || {
                    for i in 0..5 {
                        engine
                            .conversations()
                            .append(id, &ada(), vec![said("user", &format!("w{w} m{i}"))])
                            .expect("append");
                    }
                });
            }
        });
        let messages = engine.conversations().messages(id).expect("read");
        assert_eq!(messages.len(), 20, "{url}");
        for w in 0..4 {
            let mine: Vec<_> = messages
                .iter()
                .filter(|m| m.message.content.starts_with(&format!("w{w} ")))
                .map(|m| m.message.content.clone())
                .collect();
            let expected: Vec<_> = (0..5).map(|i| format!("w{w} m{i}")).collect();
            assert_eq!(mine, expected, "{url}: each writer's messages in its order");
        }
    });
}

/// A conversation stored by an earlier version (one record with its messages inline) is
/// read as it is, and moved to message records by its next append.
#[test]
fn an_earlier_versions_conversation_is_read_and_moved_on_append() {
    on_each_backend(|url, engine| {
        let id = "01JDEMO000000000000000000C";
        engine
            .kv()
            .set(
                &ns(CONVERSATIONS_NAMESPACE),
                id,
                json!({"id": id, "messages": [
                    {"role": "user", "content": "hello"},
                    {"role": "assistant", "content": "hi"}
                ], "turns": 1, "created_at": "2026-01-01T00:00:00Z",
                   "updated_at": "2026-01-01T00:00:00Z"}),
                None,
            )
            .expect("legacy record");
        let before: Vec<_> = engine
            .conversations()
            .messages(id)
            .expect("read")
            .into_iter()
            .map(|m| m.message.content)
            .collect();
        assert_eq!(before, ["hello", "hi"], "{url}");
        engine
            .conversations()
            .append(id, &Owner::default(), vec![said("user", "again")])
            .expect("append");
        let after: Vec<_> = engine
            .conversations()
            .messages(id)
            .expect("read")
            .into_iter()
            .map(|m| (m.seq, m.message.content))
            .collect();
        assert_eq!(
            after,
            [
                (0, "hello".to_owned()),
                (1, "hi".to_owned()),
                (2, "again".to_owned())
            ],
            "{url}"
        );
        assert_eq!(
            engine
                .conversations()
                .info(id)
                .expect("info")
                .expect("exists")
                .messages,
            3
        );
    });
}

/// A record of the conversations namespace that is no header (a memory written there, one
/// without an `id`) never makes the listing fail: the one without an id is the conversation
/// its key names, the one that is no header is left out.
#[test]
fn a_stray_record_does_not_break_the_listing() {
    on_each_backend(|url, engine| {
        let real = "01JDEMO000000000000000000B";
        engine
            .conversations()
            .append(real, &ada(), vec![said("user", "hello")])
            .expect("append");
        let partition = engine.partition(&ns(CONVERSATIONS_NAMESPACE));
        engine
            .remember(muisti::Put::new(partition.clone(), None, "a stray memory"))
            .expect("stray");
        let mut no_id = muisti::Put::new(
            partition,
            Some(muisti::Key::new("c-9").expect("key")),
            json!({"messages": 2}),
        );
        no_id.owner = ada();
        engine.remember(no_id).expect("header without id");
        let listed = engine
            .conversations()
            .list(None)
            .expect("the listing answers");
        let mut ids: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, [real, "c-9"], "{url}");
        assert_eq!(
            engine
                .conversations()
                .list(Some("ada"))
                .expect("list")
                .len(),
            2
        );
    });
}

/// `pop` takes back the last message, keeps the header's count and owner, and a message
/// appended after it takes the freed place; an empty or unknown conversation pops nothing.
#[test]
fn the_last_message_is_taken_back() {
    on_each_backend(|url, engine| {
        let id = "01JDEMO000000000000000000P";
        let c = engine.conversations();
        assert_eq!(c.pop(id).expect("pop"), None, "{url}: no conversation");
        c.append(
            id,
            &ada(),
            vec![said("user", "one"), said("assistant", "two")],
        )
        .expect("append");
        let popped = c.pop(id).expect("pop").expect("a message");
        assert_eq!(
            (popped.message.content.as_str(), popped.seq),
            ("two", 1),
            "{url}"
        );
        let info = c.info(id).expect("info").expect("kept");
        assert_eq!(info.messages, 1, "{url}");
        assert_eq!(info.user_id.as_deref(), Some("ada"), "{url}");
        let again = c
            .append(id, &ada(), vec![said("assistant", "three")])
            .expect("append");
        assert_eq!(again[0].seq, 1, "{url}");
        let texts: Vec<String> = c
            .messages(id)
            .expect("read")
            .into_iter()
            .map(|m| m.message.content)
            .collect();
        assert_eq!(texts, ["one", "three"], "{url}");
        c.pop(id).expect("pop");
        c.pop(id).expect("pop");
        assert_eq!(c.pop(id).expect("pop"), None, "{url}: emptied");
        assert_eq!(
            c.info(id).expect("info").expect("kept").messages,
            0,
            "{url}"
        );
    });
}
