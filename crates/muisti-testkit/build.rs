//! Derives the conformance case lists from `src/cases/*.rs`, so that a case that exists runs
//! on every backend: every `pub fn NAME(h: &dyn Harness)` becomes a test of `conformance!`
//! (those in `processes.rs`: of `conformance_persistent!`), and every
//! `pub fn NAME(h: &dyn Harness, child_test: &str)` in `processes.rs` a multi-process test.
//! Any other `pub fn` there fails the build.

use std::{fmt::Write as _, fs, path::Path};

fn main() {
    let dir = Path::new("src/cases");
    println!("cargo::rerun-if-changed=src/cases");
    let mut files: Vec<_> = fs::read_dir(dir)
        .expect("src/cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    let (mut every, mut persistent, mut processes) = (Vec::new(), Vec::new(), Vec::new());
    for path in &files {
        println!("cargo::rerun-if-changed={}", path.display());
        let text = fs::read_to_string(path).expect("readable case file");
        let in_processes = path.file_stem().is_some_and(|s| s == "processes");
        // Signatures may wrap: join the lines from `pub fn` up to the opening brace.
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\npub fn ") {
            let sig_start = at + "\npub fn ".len();
            let end = rest[sig_start..]
                .find('{')
                .map(|e| sig_start + e)
                .expect("a function body");
            let sig: String = rest[sig_start..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            rest = &rest[end..];
            let (name, params) = sig.split_once('(').expect("a parameter list");
            let params = params
                .trim_end()
                .trim_end_matches(')')
                .trim_end_matches(',');
            match (params, in_processes) {
                ("h: &dyn Harness", false) => every.push(name.to_owned()),
                ("h: &dyn Harness", true) if name == "child_writer" => {}
                ("h: &dyn Harness", true) => persistent.push(name.to_owned()),
                ("h: &dyn Harness, child_test: &str", true) => processes.push(name.to_owned()),
                _ => panic!(
                    "{}: `pub fn {sig}` is neither a case (h: &dyn Harness) nor a \
                     multi-process case (h: &dyn Harness, child_test: &str) of processes.rs; \
                     make helpers private",
                    path.display()
                ),
            }
        }
    }
    let mut out = String::new();
    let list = |names: &[String]| names.join(",\n            ");
    writeln!(
        out,
        "/// Generates one `#[test]` per conformance case for the harness expression `$make`, \
         which has the type `Option<impl Harness>` (`None` skips the test: a service is absent).\n\
         #[macro_export]\n\
         macro_rules! conformance {{\n    ($make:expr) => {{\n        $crate::conformance!(@cases $make;\n            {}\n        );\n    }};\n    \
         (@cases $make:expr; $($case:ident),* $(,)?) => {{\n        $(\n            #[test]\n            fn $case() {{\n                \
         if let Some(h) = $make {{\n                    $crate::cases::$case(&h);\n                }}\n            }}\n        )*\n    }};\n}}\n",
        list(&every)
    )
    .expect("write");
    writeln!(
        out,
        "/// The cases of stores that outlive the process (`processes.rs`), for \
         `conformance_persistent!`.\n\
         #[doc(hidden)]\n\
         #[macro_export]\n\
         macro_rules! __conformance_persistent_cases {{\n    ($make:expr, $child:expr) => {{\n        \
         $crate::conformance!(@cases $make;\n            {}\n        );\n",
        list(&persistent)
    )
    .expect("write");
    for name in &processes {
        writeln!(
            out,
            "        #[test]\n        fn {name}() {{\n            if let Some(h) = $make {{\n                \
             $crate::cases::{name}(&h, &$child);\n            }}\n        }}"
        )
        .expect("write");
    }
    out.push_str("    };\n}\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("conformance.rs");
    fs::write(dest, out).expect("write the case lists");
}
