//! The three example tests of the `Memory` interface's documentation (seed
//! 004_de7ee7d878b7a0d7), as written there, against muisti's adapter: the backend the
//! interface's example constructs (`InMemoryBackend::new()`) is muisti over memory.
#![allow(clippy::unwrap_used)]

use muisti_async::memory::*;

#[tokio::test]
async fn test_store_and_get() {
    let backend = InMemoryBackend::new();

    backend
        .store("test_key", "test_content", MemoryCategory::Core, None)
        .await
        .unwrap();

    let entry = backend.get("test_key").await.unwrap();
    assert!(entry.is_some());
    assert_eq!(entry.unwrap().content, "test_content");
}

#[tokio::test]
async fn test_recall() {
    let backend = InMemoryBackend::new();

    backend
        .store("key1", "rust programming", MemoryCategory::Core, None)
        .await
        .unwrap();

    let results = backend.recall("rust", 10, None).await.unwrap();
    assert_eq!(results.len(), 1);
}

#[tokio::test]
async fn test_session_isolation() {
    let backend = InMemoryBackend::new();

    backend
        .store("key1", "data", MemoryCategory::Core, Some("session1"))
        .await
        .unwrap();

    let results = backend.recall("data", 10, Some("session2")).await.unwrap();
    assert_eq!(results.len(), 0);
}
