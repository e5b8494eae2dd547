//! Conformance of the in-process, file and Markdown stores, the router and the privacy wrapper.

mod mem {
    use std::sync::Arc;

    use muisti_core::{Limits, Store};
    use muisti_store::MemStore;
    use muisti_testkit::Harness;

    struct MemHarness(Arc<MemStore>);

    impl Harness for MemHarness {
        fn open(&self) -> Arc<dyn Store> {
            self.0.clone()
        }
        fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
            Arc::new(MemStore::with_limits(limits))
        }
        fn location(&self) -> Option<String> {
            None
        }
        fn open_at(&self, _location: &str) -> Arc<dyn Store> {
            self.0.clone()
        }
    }

    fn harness() -> Option<MemHarness> {
        Some(MemHarness(Arc::new(MemStore::new())))
    }

    muisti_testkit::conformance!(harness());
}

mod file {
    use std::sync::Arc;

    use muisti_core::{Limits, Store};
    use muisti_store::FileStore;
    use muisti_testkit::Harness;

    pub(crate) struct FileHarness(pub(crate) tempfile::TempDir);

    impl Harness for FileHarness {
        fn open(&self) -> Arc<dyn Store> {
            Arc::new(FileStore::open(self.0.path()).expect("opens"))
        }
        fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
            Arc::new(
                FileStore::open(self.0.path())
                    .expect("opens")
                    .with_limits(limits),
            )
        }
        fn location(&self) -> Option<String> {
            Some(self.0.path().display().to_string())
        }
        fn open_at(&self, location: &str) -> Arc<dyn Store> {
            Arc::new(FileStore::open(location).expect("opens"))
        }
    }

    pub(crate) fn harness() -> Option<FileHarness> {
        Some(FileHarness(tempfile::tempdir().expect("temp dir")))
    }

    muisti_testkit::conformance!(harness());
    muisti_testkit::conformance_persistent!(harness());
}

mod markdown {
    use std::sync::Arc;

    use muisti_core::{Limits, Store};
    use muisti_store::FileStore;
    use muisti_testkit::Harness;

    pub(crate) struct MarkdownHarness(pub(crate) tempfile::TempDir);

    impl Harness for MarkdownHarness {
        fn open(&self) -> Arc<dyn Store> {
            Arc::new(FileStore::open_markdown(self.0.path()).expect("opens"))
        }
        fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
            Arc::new(
                FileStore::open_markdown(self.0.path())
                    .expect("opens")
                    .with_limits(limits),
            )
        }
        fn location(&self) -> Option<String> {
            Some(self.0.path().display().to_string())
        }
        fn open_at(&self, location: &str) -> Arc<dyn Store> {
            Arc::new(FileStore::open_markdown(location).expect("opens"))
        }
    }

    pub(crate) fn harness() -> Option<MarkdownHarness> {
        Some(MarkdownHarness(tempfile::tempdir().expect("temp dir")))
    }

    muisti_testkit::conformance!(harness());
    muisti_testkit::conformance_persistent!(harness());
}

mod router {
    use std::sync::Arc;

    use muisti_core::{Limits, Namespace, Store};
    use muisti_store::{MemStore, RouterStore};
    use muisti_testkit::Harness;

    /// A router whose `default` and `conversations` go to one store and every other
    /// namespace the conformance suite uses goes to the default; the routed store is shared
    /// so that data written through the router can be checked through it.
    struct RouterHarness {
        default: Arc<MemStore>,
        routed: Arc<MemStore>,
    }

    impl RouterHarness {
        fn build(&self, default: Arc<dyn Store>) -> Arc<dyn Store> {
            Arc::new(
                RouterStore::new(default)
                    .route(Namespace::new("alpha").expect("valid"), self.routed.clone())
                    .route(
                        Namespace::new("conversations").expect("valid"),
                        self.routed.clone(),
                    )
                    .route(
                        Namespace::new("paging").expect("valid"),
                        self.routed.clone(),
                    ),
            )
        }
    }

    impl Harness for RouterHarness {
        fn open(&self) -> Arc<dyn Store> {
            self.build(self.default.clone())
        }
        fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
            self.build(Arc::new(MemStore::with_limits(limits)))
        }
        fn location(&self) -> Option<String> {
            None
        }
        fn open_at(&self, _location: &str) -> Arc<dyn Store> {
            self.open()
        }
    }

    fn harness() -> Option<RouterHarness> {
        Some(RouterHarness {
            default: Arc::new(MemStore::new()),
            routed: Arc::new(MemStore::new()),
        })
    }

    muisti_testkit::conformance!(harness());
}

mod file_faults;
mod wrappers;
