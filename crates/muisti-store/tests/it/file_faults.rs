//! The file store with damaged files: a clear error naming the file, nothing else lost.

use std::fs;

use muisti_core::{ErrorKind, Key, Locator, Namespace, Partition, Put, Store};
use muisti_store::{FileStore, encode_name};
use serde_json::json;

fn p(ns: &str) -> Partition {
    Partition::of(Namespace::new(ns).expect("valid"))
}

fn put(s: &FileStore, ns: &str, k: &str, v: &str) -> muisti_core::Result<()> {
    s.put(Put::new(p(ns), Some(Key::new(k).expect("valid")), v))
        .map(|_| ())
}

fn get(s: &FileStore, ns: &str, k: &str) -> muisti_core::Result<Option<serde_json::Value>> {
    s.get(&Locator::Key {
        partition: p(ns),
        key: Key::new(k).expect("valid"),
    })
    .map(|m| m.map(|m| m.content))
}

fn damage(case: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let s = FileStore::open(dir.path()).expect("opens");
    put(&s, "user:1", "k", "v").expect("writes");
    put(&s, "other", "k", "kept").expect("writes");
    let file = dir
        .path()
        .join("default")
        .join(format!("{}.json", encode_name("user:1")));
    let original = fs::read(&file).expect("file exists");
    match case {
        "truncated" => fs::write(&file, &original[..original.len() / 2]).expect("truncates"),
        "garbage" => fs::write(&file, b"\x00\xffnot json").expect("writes"),
        "wrong-namespace" => {
            let text = String::from_utf8(original.clone()).expect("utf-8");
            fs::write(&file, text.replace("\"user:1\"", "\"user:2\"")).expect("writes")
        }
        _ => unreachable!(),
    }
    // Fresh handle: no cache to hide the damage.
    let s = FileStore::open(dir.path()).expect("opens");
    let err = get(&s, "user:1", "k").expect_err(case);
    assert_eq!(err.kind(), ErrorKind::Corrupted, "{case}: {err}");
    assert!(
        err.to_string().contains(&file.display().to_string()),
        "{err}"
    );
    // A write does not overwrite the damaged file (which would lose what it held).
    let err = put(&s, "user:1", "k2", "v2").expect_err(case);
    assert_eq!(err.kind(), ErrorKind::Corrupted);
    assert_ne!(fs::read(&file).expect("still there"), original);
    // Other namespaces keep working.
    assert_eq!(get(&s, "other", "k").expect("reads"), Some(json!("kept")));
    put(&s, "other", "k2", "new").expect("writes");
    assert_eq!(get(&s, "other", "k2").expect("reads"), Some(json!("new")));
}

#[test]
fn truncated_file_is_reported_and_isolated() {
    damage("truncated");
}

#[test]
fn garbage_file_is_reported_and_isolated() {
    damage("garbage");
}

#[test]
fn file_holding_another_namespace_is_reported() {
    damage("wrong-namespace");
}

#[test]
fn similar_namespaces_have_distinct_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let s = FileStore::open(dir.path()).expect("opens");
    for ns in ["user:1", "user.1", "user_1"] {
        put(&s, ns, "k", ns).expect("writes");
    }
    let mut files: Vec<_> = fs::read_dir(dir.path().join("default"))
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    assert_eq!(files, ["user%2E1.json", "user%3A1.json", "user_1.json"]);
}

/// A deleted memory leaves no byte of itself in the store's files (the namespace file is
/// rewritten whole and renamed over the old one).
#[test]
fn a_deleted_canary_leaves_nothing_in_the_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let s = FileStore::open(dir.path()).expect("opens");
    put(&s, "user:1", "keep", "an ordinary memory").expect("writes");
    put(
        &s,
        "user:1",
        "secret",
        "CANARYzq7 secret diagnosis xylophone",
    )
    .expect("writes");
    assert!(
        s.delete(&Locator::Key {
            partition: p("user:1"),
            key: Key::new("secret").expect("valid"),
        })
        .expect("deletes")
    );
    drop(s);
    let (hits, files) =
        muisti_testkit::needles_in_files(dir.path(), &["canaryzq7", "xylophon", "diagnos"]);
    assert!(hits.is_empty(), "still there: {hits:?}");
    assert!(files > 0, "the store has files");
}
