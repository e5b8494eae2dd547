//! The conformance suite: one set of expectations that every [`Store`] must meet.
//!
//! A backend crate implements [`Harness`] for its store and calls [`conformance!`] in its
//! integration tests, once per store. Each case becomes its own `#[test]`, so the count per
//! backend shows in the test output.
//!
//! ```text
//! muisti_testkit::conformance!(my_harness());           // every store
//! muisti_testkit::conformance_persistent!(my_harness()); // stores that outlive the process
//! ```
//!
//! Services: [`service_unavailable`] prints a skip line when a service (Redis, PostgreSQL) is
//! absent, or panics when `MUISTI_REQUIRE_SERVICES=1`.

#![allow(clippy::unwrap_used)] // a test kit: a failed expectation must panic

pub mod cases;
pub mod http;
pub mod llm;
pub mod redis_keys;

use std::sync::Arc;

use muisti_core::{Limits, Store};

/// How the suite reaches a backend. One harness is made per test, with its own empty data.
pub trait Harness {
    /// Opens a handle on this harness's data (the same data on every call).
    fn open(&self) -> Arc<dyn Store>;
    /// Opens a handle on this harness's data that enforces `limits`.
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store>;
    /// A location that [`Harness::open_at`] (in another process) can open, for stores that
    /// support several processes.
    fn location(&self) -> Option<String>;
    /// Opens the store at a location given by [`Harness::location`].
    fn open_at(&self, location: &str) -> Arc<dyn Store>;
}

/// Call when a required service is unreachable: prints a skip line and returns, or panics
/// if `MUISTI_REQUIRE_SERVICES=1`.
pub fn service_unavailable(service: &str, why: &str) {
    if std::env::var("MUISTI_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
        panic!("{service} is required (MUISTI_REQUIRE_SERVICES=1) but unavailable: {why}");
    }
    println!("skipped: {service} unavailable ({why})");
}

/// Generates one `#[test]` per conformance case for the harness expression `$make`, which
/// has the type `Option<impl Harness>` (`None` skips the test: a service is absent).
#[macro_export]
macro_rules! conformance {
    ($make:expr) => {
        $crate::conformance!(@cases $make;
            kv_round_trip_of_json_values,
            get_missing_is_none,
            put_replaces_and_keeps_identity,
            put_without_key_creates,
            get_by_id_is_confined_to_tenant,
            delete_by_key_and_by_id,
            flush_clears_only_its_partition,
            similar_namespaces_never_share_storage,
            tenants_never_share_storage,
            list_filters,
            list_pages_in_id_order,
            count_follows_filters_and_expiry,
            namespaces_lists_non_empty,
            ttl_expires_everywhere,
            ttl_absent_never_expires,
            purge_removes_expired,
            too_large_is_rejected_and_writes_nothing,
            limit_is_configurable,
            invalid_fields_write_nothing,
            put_many_writes_all,
            put_many_validates_before_writing,
            touch_counts_access,
            search_ranks_by_token_overlap,
            search_is_confined_to_partition_and_filter,
            all_fields_round_trip,
            unicode_keys_and_content,
            concurrent_writers_lose_nothing,
            concurrent_upserts_keep_one_record,
            health_check_ok,
            random_operations_match_a_model,
            vectors_follow_their_records,
            vector_search_finds_nearest,
            text_search_ranks_by_bm25,
            get_many_keeps_order,
            text_search_reads_context,
            tenants_and_set_vectors,
            update_changes_fields_and_bumps_version,
            update_refusals_change_nothing,
            update_moves_state_and_expiry,
            update_vectors_follow_the_text,
            racing_conditional_updates_lose_nothing,
            filters_agree_with_the_reference,
            text_scores_ignore_other_partitions,
            rank_fields_follow_the_records
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                if let Some(h) = $make {
                    $crate::cases::$case(&h);
                }
            }
        )*
    };
}

/// Generates the cases for stores that outlive the process and may be shared by several
/// processes: reopen, and several processes writing at once. `$make` as in [`conformance!`].
#[macro_export]
macro_rules! conformance_persistent {
    ($make:expr) => {
        $crate::conformance!(@cases $make; data_survives_reopen);

        /// The full name of `conformance_child_writer` in this test binary.
        fn conformance_child_name() -> String {
            let module = module_path!();
            match module.split_once("::") {
                Some((_, rest)) => format!("{rest}::conformance_child_writer"),
                None => "conformance_child_writer".to_string(),
            }
        }

        #[test]
        fn multi_process_writers_lose_nothing() {
            if let Some(h) = $make {
                $crate::cases::multi_process_writers_lose_nothing(&h, &conformance_child_name());
            }
        }

        #[test]
        fn multi_process_conditional_updates_lose_nothing() {
            if let Some(h) = $make {
                $crate::cases::multi_process_conditional_updates_lose_nothing(
                    &h,
                    &conformance_child_name(),
                );
            }
        }

        #[test]
        fn killed_writer_loses_no_acknowledged_write() {
            if let Some(h) = $make {
                $crate::cases::killed_writer_loses_no_acknowledged_write(
                    &h,
                    &conformance_child_name(),
                );
            }
        }

        /// The child side of `multi_process_writers_lose_nothing`: run by that test in
        /// another process, never on its own.
        #[test]
        #[ignore = "spawned by multi_process_writers_lose_nothing"]
        fn conformance_child_writer() {
            if let Some(h) = $make {
                $crate::cases::child_writer(&h);
            }
        }
    };
}
