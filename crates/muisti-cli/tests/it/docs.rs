//! Every `muisti` command the README and docs/ show, run as a reader would run it: page by
//! page, in the page's order, on a store of the page's own (seeded with a user's clustered
//! memories; `ID` and the like stand for real ones, made when a command needs one).
//!
//! What the test changes, and only that: placeholders get real values; paths of this
//! machine's data (`../shared/data/...`, `/data/muisti.db`, `/home/ana/notes`) become small
//! files of the same format in a scratch directory; a chat model's URL is a scripted model on
//! loopback; a server's URL is a `muisti serve` the test started; a database's is the test's
//! (skipped visibly without it); a bench's sizes are cut to a few hundred memories and a
//! fraction of a second, so that it runs its whole path in a test's time. A command the
//! prose only names (a required argument left out) is a mention, and counted as one.

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use muisti_testkit::{
    http::{Received, Reply, Server},
    llm, service_unavailable,
};
use serde_json::{Value, json};

#[path = "../../src/documented.rs"]
mod documented;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Where a listing's cursor goes, filled once the listing's order is known.
const CURSOR: &str = "<cursor>";

/// A command's longest run before it counts as hung.
const LIMIT: Duration = Duration::from_secs(240);

/// A bench's sizes in the test: flag and value, set whether or not the page gives the flag.
fn bench_sizes(bench: &str) -> &'static [(&'static str, &'static str)] {
    match bench {
        "scale" => &[("--memories", "300"), ("--queries", "5")],
        "http" => &[
            ("--memories", "200"),
            ("--seconds", "0.3"),
            ("--connections", "2"),
        ],
        "load" => &[
            ("--memories", "200"),
            ("--seconds", "0.5"),
            ("--rate", "20"),
            ("--connections", "2"),
        ],
        "maintain" => &[("--memories", "300"), ("--per-user", "100")],
        "agent" | "proxy" => &[("--memories", "200"), ("--messages", "5")],
        "graph" => &[("--edges", "200"), ("--queries", "5")],
        "store" => &[("--count", "100"), ("--file-writes", "20")],
        _ => &[],
    }
}

/// Whether a command can run here.
enum Needs {
    /// Everything it needs is here.
    Nothing,
    /// A service that is missing (its name, and why), to be reported.
    Missing(&'static str, String),
    /// A missing service the helper that looked for it has reported.
    Reported,
}

/// The scratch files that stand for the pages' data.
struct Fixtures {
    dir: tempfile::TempDir,
}

impl Fixtures {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let locomo = dir.path().join("locomo");
        std::fs::create_dir_all(&locomo).expect("dir");
        for (name, who, place) in [("1", "Ana", "Lisbon"), ("2", "Ben", "Oslo")] {
            let turns: Vec<Value> = [
                format!("I moved to {place} last spring."),
                "We adopted a dog called Rex.".to_owned(),
                "My sister teaches piano.".to_owned(),
                "I started running every morning.".to_owned(),
            ]
            .iter()
            .enumerate()
            .map(|(i, text)| json!({"speaker": who, "dia_id": format!("D1:{}", i + 1), "text": text}))
            .collect();
            let conversation = json!({
                "speaker_a": who, "speaker_b": "Sam",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": turns,
                "qa": [
                    {"question": format!("Where did {who} move?"), "answer": place,
                     "evidence": ["D1:1"], "category": 1},
                    {"question": format!("What is the name of {who}'s dog?"), "answer": "Rex",
                     "evidence": ["D1:2"], "category": 1},
                ],
            });
            std::fs::write(
                locomo.join(format!("{name}.json")),
                conversation.to_string(),
            )
            .expect("write");
        }
        let qa = dir.path().join("memory-qa");
        std::fs::create_dir_all(&qa).expect("dir");
        let mut rows = Vec::new();
        for user in ["u1", "u2"] {
            rows.push(
                json!({"type": "memory", "user": user, "id": format!("{user}-m1"),
                "text": "I keep bees on the roof", "date": "2024-05-01"}),
            );
            rows.push(
                json!({"type": "memory", "user": user, "id": format!("{user}-m2"),
                "text": "My sister lives in Oslo", "date": "2024-05-02"}),
            );
            rows.push(
                json!({"type": "question", "user": user, "id": format!("{user}-q1"),
                "text": "Where does my sister live?", "relevant": [format!("{user}-m2")],
                "kind": "lexical", "asked": "2024-06-01"}),
            );
        }
        let rows: Vec<String> = rows.iter().map(Value::to_string).collect();
        std::fs::write(qa.join("memory-qa-dev.jsonl"), rows.join("\n")).expect("write");
        let notes = dir.path().join("notes");
        std::fs::create_dir_all(&notes).expect("dir");
        std::fs::write(notes.join("travel.md"), "I prefer window seats.\n").expect("write");
        Self { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// What a chat message says to make the scripted model refuse it, once (a failed run).
const REFUSE_ONCE: &str = "refuse this once";

/// The scripted chat model, OpenAI's protocol or Anthropic's: a streamed or whole answer, an
/// empty list of facts to an extraction, no tool call; a 401 to the first message of
/// [`REFUSE_ONCE`].
fn model() -> Server {
    let refused = std::sync::atomic::AtomicBool::new(false);
    Server::answering(move |r: &Received| {
        if r.body.contains(REFUSE_ONCE) && !refused.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            Reply::json(401, r#"{"error":{"message":"bad key"}}"#)
        } else if r.path.ends_with("/messages") {
            if r.body.contains("\"stream\":true") {
                llm::anthropic_stream(&["Noted."])
            } else {
                llm::anthropic_reply("Noted.")
            }
        } else if r.body.contains("\"stream\":true") {
            llm::openai_stream(&["Noted."])
        } else if r.body.contains("\"facts\"") {
            llm::openai_reply(r#"{"facts": []}"#)
        } else {
            llm::openai_reply("Noted.")
        }
    })
}

/// A page's reader: its own data directory, its admin key, and a server on its store
/// started when a command names one.
struct Reader<'a> {
    home: tempfile::TempDir,
    fixtures: &'a Fixtures,
    model: &'a Server,
    /// The admin key commands that need one use (made on first use: the first key ends the
    /// open mode).
    key: Option<Key>,
    /// Variables the page exports (`export MUISTI_...=...`) for the commands after it.
    env: Vec<(String, String)>,
    /// Files the page's commands wrote, numbered; the last one is what `-i F` reads.
    written: Vec<String>,
    server: Option<super::serve::Served>,
    /// A second server on the same store (`--also URL2`).
    also: Option<super::serve::Served>,
    /// Redis prefixes and PostgreSQL schemas used by the page, removed at its end.
    redis: Vec<muisti_testkit::redis_keys::KeyPrefix>,
    cluster: Vec<muisti_testkit::redis_cluster::ClusterPrefix>,
    postgres: Vec<super::servers::PgSchema>,
}

/// An API key: its id and the secret sent with requests.
struct Key {
    id: String,
    secret: String,
}

/// How a command ended.
enum Outcome {
    Ran,
    Mention,
    Skipped,
    Failed(String),
}

impl<'a> Reader<'a> {
    fn new(fixtures: &'a Fixtures, model: &'a Server) -> Self {
        let home = tempfile::tempdir().expect("temp dir");
        // The benches' default data are the repository's, named relative to its root.
        std::os::unix::fs::symlink(format!("{ROOT}/crates"), home.path().join("crates"))
            .expect("link");
        std::fs::write(home.path().join("muisti.toml"), "").expect("config");
        std::fs::write(
            home.path().join("conversation.json"),
            json!([{"role": "user", "content": "I live in Porto"}]).to_string(),
        )
        .expect("conversation");
        std::fs::create_dir_all(home.path().join("tmp")).expect("tmp");
        let mut reader = Self {
            home,
            fixtures,
            model,
            key: None,
            env: Vec::new(),
            written: Vec::new(),
            server: None,
            also: None,
            redis: Vec::new(),
            cluster: Vec::new(),
            postgres: Vec::new(),
        };
        reader.seed();
        reader
    }

    /// `muisti` in the page's directory; the scripted model is the chat model unless the
    /// command goes to a server (whose model it is).
    fn command(&self, remote: bool) -> Command {
        let h = self.home.path();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_muisti"));
        cmd.current_dir(h)
            .env("XDG_DATA_HOME", h.join("data"))
            .env("XDG_CACHE_HOME", h.join("cache"))
            .env("HOME", h)
            .env("TMPDIR", h.join("tmp"))
            .env("OPENAI_API_KEY", "sk-test")
            .env_remove("MUISTI_LLM_URL")
            .env_remove("MUISTI_LLM_MODEL")
            .env_remove("MUISTI_STORE")
            .env_remove("MUISTI_TENANT")
            .env_remove("MUISTI_LISTEN")
            .env_remove("MUISTI_CONFIG")
            .env_remove("MUISTI_API_KEY")
            .env_remove("MUISTI_SERVER");
        if !remote {
            cmd.env("MUISTI_LLM_URL", self.model.base_url())
                .env("MUISTI_LLM_MODEL", "scripted");
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs `args` to its end; its status, output and error.
    fn run(&self, args: &[String], stdin: &[u8]) -> (Option<i32>, String, String) {
        let remote = args.iter().any(|w| w == "--server");
        let mut child = self
            .command(remote)
            .args(&args[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("muisti runs");
        let mut input = child.stdin.take().expect("piped");
        let stdin = stdin.to_vec();
        let feeder = std::thread::spawn(move || {
            let _ = input.write_all(&stdin);
        });
        let (mut out, mut err) = (
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = out.read_to_end(&mut text);
            text
        });
        let err_reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = err.read_to_end(&mut text);
            text
        });
        let start = Instant::now();
        // Most commands end within a few milliseconds of starting: look often at first.
        let mut pause = Duration::from_millis(1);
        let status = loop {
            if let Some(s) = child.try_wait().expect("waits") {
                break s;
            }
            if start.elapsed() > LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                return (
                    None,
                    String::new(),
                    format!("still running after {LIMIT:?}"),
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        };
        let _ = feeder.join();
        let out = reader.join().unwrap_or_default();
        let err = err_reader.join().unwrap_or_default();
        (
            status.code(),
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    /// Runs `muisti ARGS` to its end; its status, output and error.
    fn attempt(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let all: Vec<String> = std::iter::once("muisti")
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect();
        self.run(&all, b"")
    }

    /// Runs `muisti ARGS`, which must succeed; its output and error.
    fn must(&self, args: &[&str]) -> (String, String) {
        let (code, out, err) = self.attempt(args);
        assert_eq!(code, Some(0), "seed {args:?}: {out}{err}");
        (out, err)
    }

    /// Runs `muisti ARGS --json`, which must succeed; the `id` of what it made.
    fn made(&self, args: &[&str]) -> String {
        let (out, _) = self.must(&[args, &["--json"]].concat());
        let made: Value =
            serde_json::from_str(&out).unwrap_or_else(|_| panic!("seed {args:?}: JSON: {out}"));
        made["id"].as_str().expect("id").to_owned()
    }

    /// A user's topics to list: alice's memories, clustered.
    fn seed(&mut self) {
        for fact in [
            "I prefer window seats on long flights",
            "My sister lives in Oslo with her two cats",
            "I am allergic to peanuts and shellfish",
            "I run five kilometres every morning before work",
        ] {
            for n in 1..=3 {
                self.must(&["remember", &format!("{fact} ({n})"), "--user", "alice"]);
            }
        }
        self.must(&["maintain", "--job", "cluster"]);
    }

    /// A new memory of alice's; its id.
    fn memory(&self) -> String {
        self.made(&[
            "remember",
            "Alice prefers window seats",
            "--user",
            "alice",
            "--tag",
            "travel",
        ])
    }

    /// A new conversation of one exchange with the scripted model; its id.
    fn conversation(&self) -> String {
        let (_, err) = self.must(&["chat", "-m", "hello"]);
        err.lines()
            .find_map(|l| l.strip_prefix("conversation: "))
            .unwrap_or_else(|| panic!("a conversation id: {err}"))
            .trim()
            .to_owned()
    }

    /// A run the model refused, left to be finished with `--resume`; its id.
    fn failed_run(&self) -> String {
        let (_, _, err) = self.attempt(&["chat", "--durable-runs", "-m", REFUSE_ONCE]);
        err.split("--resume ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("a run id: {err}"))
            .to_owned()
    }

    /// A new pending proposal for alice (an agent-learned fact against hers); its id.
    fn proposal(&self) -> String {
        let fact = [
            "--scope",
            "declarative",
            "--type",
            "fact",
            "--user",
            "alice",
        ];
        self.must(&[&["remember", "I live in Paris"][..], &fact].concat());
        let learned = [
            &[
                "remember",
                "The user lives in Rome",
                "--source",
                "agent_learned",
            ][..],
            &["--confidence", "80"],
            &fact,
        ]
        .concat();
        let _gated = self.attempt(&learned);
        let (pending, _) = self.must(&["proposals", "--user", "alice", "--json"]);
        let pending: Value = serde_json::from_str(&pending).expect("JSON proposals");
        pending["proposals"][0]["id"]
            .as_str()
            .expect("a proposal")
            .to_owned()
    }

    /// A memory moved to the archive; its id.
    fn archived(&self) -> String {
        let id = self.made(&["remember", "Zoe kept an old note", "--user", "zoe"]);
        self.must(&[
            "maintain",
            "--job",
            "archive",
            "--archive-after-days",
            "0",
            "--user",
            "zoe",
        ]);
        id
    }

    /// Two entities of no user's that are one person, to merge: the one to keep first.
    fn entities(&mut self) -> [String; 2] {
        self.env
            .push(("MUISTI_GRAPH_EXTRACTOR".into(), "offline".into()));
        self.must(&["remember", "Bob works at Acme."]);
        self.must(&["remember", "Robert works at Acme."]);
        self.env.pop();
        ["Robert".into(), "Bob".into()]
    }

    /// A new snapshot of the store; its id.
    fn snapshot(&self) -> String {
        self.made(&["snapshot", "create"])
    }

    /// A new file name in the page's directory, remembered as the last written.
    fn output(&mut self, name: &str) -> String {
        let path = self.scratch(&format!("{}-{name}", self.written.len()));
        self.written.push(path.clone());
        path
    }

    /// The value a placeholder stands for, by what comes before it: a new one of its kind
    /// each time, since the page's earlier commands may have deleted the last.
    fn fill(&mut self, placeholder: &str, before: &[String]) -> String {
        let last = before.last().map(String::as_str).unwrap_or_default();
        let subcommand = before
            .iter()
            .skip(1)
            .find(|w| !w.starts_with('-') && !w.contains("://"))
            .map(String::as_str)
            .unwrap_or_default();
        match (placeholder, last) {
            ("URL2" | "URL2,...", _) => self.also_url(),
            (_, "--api-key") => self
                .key
                .as_ref()
                .map(|k| k.secret.clone())
                .unwrap_or_default(),
            (_, "--server" | "--also") => self.server_url(),
            (_, "--base-url" | "--llm-base-url") => self.model.base_url(),
            (_, "--data") => self.data_for(before),
            (_, "--store") => format!("sqlite://{}", self.scratch("store.db")),
            (_, "--db" | "--dump" | "-o" | "--output") => self.output("out"),
            (_, "-i" | "--input") => self
                .written
                .last()
                .cloned()
                .unwrap_or_else(|| self.scratch("none")),
            (_, "--from") => format!("markdown://{}", self.fixtures.path("notes")),
            (_, "--user" | "-u" | "--user-id") => "alice".to_owned(),
            (_, "--tenant") => "acme".to_owned(),
            (_, "-n" | "--namespace") => "default".to_owned(),
            (_, "--access-log") => "scores".to_owned(),
            (_, "--model" | "--llm-model") => "scripted".to_owned(),
            (_, "--listen") => "127.0.0.1:0".to_owned(),
            (_, "--expected-version") => "1".to_owned(),
            (_, "--cluster") => "0".to_owned(),
            // As the README's own example, so that a prune leaves the user's topics.
            (_, "--max-memories") => "1000".to_owned(),
            (_, "--rerank" | "--graph-weight") => "0.5".to_owned(),
            ("TIME", _) | (_, "--as-of") => "2030-01-01T00:00:00Z".to_owned(),
            ("N" | "M" | "K", _) => "3".to_owned(),
            ("W", _) => "0.5".to_owned(),
            ("F" | "FILE" | "PATH" | "DIR", _) => self.output("file"),
            ("URL", _) => self.server_url(),
            ("PROPOSAL", _) => self.proposal(),
            ("RUN_ID", _) => self.failed_run(),
            // Read once the whole command is known (a cursor is its listing's).
            ("CURSOR", _) => CURSOR.to_owned(),
            ("ID" | "ID_OR_KEY", _) => match subcommand {
                "snapshot" => self.snapshot(),
                "keys" => self.key.as_ref().map(|k| k.id.clone()).unwrap_or_default(),
                "conversation" | "end-conversation" | "chat" => self.conversation(),
                "restore" => self.archived(),
                _ => self.memory(),
            },
            ("KEY", _) => "customer_tier".to_owned(),
            ("VALUE" | "TEXT", _) => "gold tier customer".to_owned(),
            ("QUERY" | "...", _) => "window seats".to_owned(),
            ("USER" | "U", _) => "alice".to_owned(),
            ("NS", _) => "default".to_owned(),
            ("ADMIN", _) => self
                .key
                .as_ref()
                .map(|k| k.secret.clone())
                .unwrap_or_default(),
            ("MODE", _) => "scores".to_owned(),
            ("KEEP", _) => self.entities()[0].clone(),
            ("OTHER", _) => self.entities()[1].clone(),
            ("ADDR", _) => "127.0.0.1:0".to_owned(),
            _ => "x".to_owned(),
        }
    }

    /// A path in the page's scratch directory.
    fn scratch(&self, name: &str) -> String {
        self.home.path().join(name).display().to_string()
    }

    /// The data a bench reads, of its format: the scratch LoCoMo and memory-qa sets, else
    /// the repository's labelled set the bench reads by default.
    fn data_for(&self, before: &[String]) -> String {
        let bench = before
            .iter()
            .position(|w| w == "bench")
            .and_then(|at| before.get(at + 1))
            .map(String::as_str)
            .unwrap_or_default();
        match bench {
            "memory-qa" => self.fixtures.path("memory-qa"),
            "duplicates" => "crates/muisti-lang/tests/data/near-duplicates.jsonl".to_owned(),
            "conflicts" => "crates/muisti-lang/tests/data/conflicts.jsonl".to_owned(),
            "extract" => "crates/muisti-lang/tests/data/fact-extraction.jsonl".to_owned(),
            _ => self.fixtures.path("locomo"),
        }
    }

    /// The URL of the page's server (started by `read` when a command names one).
    fn server_url(&self) -> String {
        self.server
            .as_ref()
            .map(|s| s.base.clone())
            .unwrap_or_default()
    }

    /// A second server on the page's store, started on first use.
    fn also_url(&mut self) -> String {
        if self.also.is_none() {
            self.also = Some(self.serve());
        }
        self.also
            .as_ref()
            .map(|s| s.base.clone())
            .unwrap_or_default()
    }

    /// `muisti serve` on the page's store with the scripted model as its chat model.
    fn serve(&self) -> super::serve::Served {
        let model = self.model.base_url();
        super::serve::serve(
            self.home.path(),
            &["--llm-model", "scripted", "--llm-base-url", &model],
        )
    }

    /// The cursor of the listing `args` gives, past its first memory.
    fn cursor(&self, args: &[String], at: usize) -> Option<String> {
        let mut first: Vec<String> = args
            .iter()
            .enumerate()
            .filter(|(i, _)| *i + 1 != at && *i != at)
            .map(|(_, w)| w.clone())
            .collect();
        if let Some(p) = first.iter().position(|w| w == "--limit") {
            first.drain(p..=p + 1);
        }
        first.extend(["--limit", "1", "--json"].map(str::to_owned));
        let (code, out, err) = self.run(&first, b"");
        assert_eq!(code, Some(0), "{first:?}: {err}");
        let listed: Value = serde_json::from_str(&out).expect("a JSON listing");
        listed["next_cursor"].as_str().map(str::to_owned)
    }

    /// The page's command with the machine's data, URLs and sizes replaced (see the
    /// module's comment), and what it needs.
    fn prepare(&mut self, args: &mut Vec<String>) -> Needs {
        if let Some(at) = args.iter().position(|w| w == CURSOR) {
            match self.cursor(args, at) {
                Some(cursor) => args[at] = cursor,
                None => {
                    args.drain(at - 1..=at);
                }
            }
        }
        let mut needs = Needs::Nothing;
        let mut i = 1;
        while i < args.len() {
            let (flag, value) = (args[i - 1].clone(), args[i].clone());
            let replaced = match flag.as_str() {
                "--data" if value.contains("shared/data") || value == "x" => {
                    Some(self.data_for(args))
                }
                "--store" => match self.store(&value) {
                    Ok(url) => Some(url),
                    Err(missing) => {
                        needs = missing;
                        None
                    }
                },
                "--base-url" | "--llm-base-url" => Some(self.model.base_url()),
                "--server" if value.starts_with("http") => Some(self.server_url()),
                "--dump" | "--db" | "-o" if !value.starts_with('/') => Some(self.scratch(&value)),
                "--from" if value.starts_with("markdown://") => {
                    Some(format!("markdown://{}", self.fixtures.path("notes")))
                }
                _ => None,
            };
            if let Some(v) = replaced {
                args[i] = v;
            }
            i += 1;
        }
        for w in args.iter_mut() {
            if w == "model2vec:DIR" {
                // The built-in model is a model2vec directory.
                *w = format!("model2vec:{ROOT}/crates/muisti-embed/model");
            } else if w.starts_with("01") && w.ends_with("...") {
                // An id cut short in the prose (`--conversation 01JD...`).
                *w = self.conversation();
            }
        }
        if let Some(at) = args.iter().position(|w| w == "bench")
            && let Some(bench) = args.get(at + 1).cloned()
        {
            for (flag, value) in bench_sizes(&bench) {
                match args.iter().position(|w| w == flag) {
                    Some(p) if p + 1 < args.len() => args[p + 1] = (*value).to_owned(),
                    _ => args.extend([(*flag).to_owned(), (*value).to_owned()]),
                }
            }
            if bench == "store" && !redis_reachable() {
                // Its default backends include Redis.
                needs = Needs::Missing("redis", "no server at MUISTI_REDIS_URL".into());
            }
        }
        if args.iter().any(|w| w.contains("minilm"))
            && std::env::var_os("MUISTI_MODEL_DIR").is_none()
        {
            needs = Needs::Missing("all-MiniLM-L6-v2", "MUISTI_MODEL_DIR is not set".into());
        }
        needs
    }

    /// A store URL of the page as one the test may use.
    fn store(&mut self, url: &str) -> Result<String, Needs> {
        if url.starts_with("redis") {
            if !url.starts_with("redis+cluster") && !redis_reachable() {
                return Err(Needs::Missing(
                    "redis",
                    "no server at MUISTI_REDIS_URL".into(),
                ));
            }
            if url.starts_with("redis+cluster") {
                // The helper reports a missing cluster.
                let cluster =
                    muisti_testkit::redis_cluster::shared_cluster_url().ok_or(Needs::Reported)?;
                let p = muisti_testkit::redis_cluster::ClusterPrefix::fresh(cluster, "docs");
                let url = p.store_url();
                self.cluster.push(p);
                return Ok(url);
            }
            let p = muisti_testkit::redis_keys::KeyPrefix::fresh(
                muisti_testkit::redis_keys::base_url(),
                "docs",
            );
            let url = p.store_url();
            self.redis.push(p);
            return Ok(url);
        }
        if url.starts_with("postgres") {
            let Some(schema) = super::servers::PgSchema::fresh() else {
                // The helper reported the missing server.
                return Err(Needs::Reported);
            };
            let url = schema.url.clone();
            self.postgres.push(schema);
            return Ok(url);
        }
        if let Some(path) = url.strip_prefix("sqlite://") {
            let name = Path::new(path.split('?').next().unwrap_or(path))
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "store.db".into());
            return Ok(format!("sqlite://{}", self.scratch(&name)));
        }
        match url.strip_prefix("URL").or_else(|| url.strip_prefix("$url")) {
            // `URL&cache_mb=0`: the page's store with the parameters given.
            Some(params) => Ok(format!(
                "sqlite://{}{}",
                self.scratch("url.db"),
                params.replacen('&', "?", 1)
            )),
            None => Ok(url.to_owned()),
        }
    }

    /// An admin key, made on first use.
    fn key(&mut self) {
        if self.key.is_none() {
            let (out, _) = self.must(&["keys", "create", "--tenant", "acme", "--admin", "--json"]);
            let key: Value = serde_json::from_str(&out).expect("a JSON key");
            let field = |f: &str| key[f].as_str().expect("a key's field").to_owned();
            self.key = Some(Key {
                id: field("id"),
                secret: field("key"),
            });
        }
    }

    /// Runs one documented command; `stdin` is what the command before it in a pipe wrote.
    fn read(&mut self, command: &str, stdin: &[u8]) -> (Outcome, String) {
        if let Some(set) = command.strip_prefix("export ") {
            let (k, v) = set.split_once('=').expect("export NAME=VALUE");
            self.env.push((k.to_owned(), v.to_owned()));
            return (Outcome::Ran, String::new());
        }
        if command.contains("--api-key") || command.contains("keys revoke ID") {
            self.key();
        }
        if (command.contains("--server") || command.contains("--also")) && self.server.is_none() {
            self.server = Some(self.serve());
        }
        let mut args = documented::words(command, |p, before| self.fill(p, before));
        match self.prepare(&mut args) {
            Needs::Nothing => {}
            Needs::Missing(service, why) => {
                service_unavailable(service, &format!("`{command}`: {why}"));
                return (Outcome::Skipped, String::new());
            }
            Needs::Reported => return (Outcome::Skipped, String::new()),
        }
        if args.get(1).map(String::as_str) == Some("serve")
            || (args.iter().any(|w| w == "serve") && !args.iter().any(|w| w == "bench"))
        {
            return (self.serves(&args), String::new());
        }
        // MCP over standard input: a client's first message, then the input ends.
        let initialize = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1,
            "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "docs", "version": "1"}}}))
        .expect("json");
        let stdin = if args.get(1).map(String::as_str) == Some("mcp") {
            [&initialize[..], b"\n"].concat()
        } else {
            stdin.to_vec()
        };
        let (code, out, err) = self.run(&args, &stdin);
        if code == Some(0) && args.iter().any(|w| w == "flush") {
            // The namespace is empty: the commands after it read the seed again.
            self.seed();
        }
        let outcome = match code {
            Some(0) => Outcome::Ran,
            Some(2) if is_mention(&err) => Outcome::Mention,
            _ => Outcome::Failed(format!("`{}` exited {code:?}: {err}", args.join(" "))),
        };
        (outcome, out)
    }

    /// A `serve` command: it starts (the serving line) and is stopped.
    fn serves(&self, args: &[String]) -> Outcome {
        let mut args = args.to_vec();
        match args.iter().position(|w| w == "--listen") {
            Some(p) if p + 1 < args.len() => args[p + 1] = "127.0.0.1:0".into(),
            _ => args.extend(["--listen".to_owned(), "127.0.0.1:0".to_owned()]),
        }
        let mut child = self
            .command(false)
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("muisti serve runs");
        let lines = BufReader::new(child.stderr.take().expect("piped")).lines();
        let mut seen = Vec::new();
        let mut serving = false;
        for line in lines.map_while(Result::ok) {
            if line.contains("muisti serving") {
                serving = true;
                break;
            }
            seen.push(line);
        }
        let _ = child.kill();
        let status = child.wait();
        if serving {
            Outcome::Ran
        } else if status.ok().and_then(|s| s.code()) == Some(2) && is_mention(&seen.join("\n")) {
            Outcome::Mention
        } else {
            Outcome::Failed(format!(
                "`{}` did not serve: {}",
                args.join(" "),
                seen.join("\n")
            ))
        }
    }
}

/// Whether the tests' Redis server answers a connection.
fn redis_reachable() -> bool {
    let url = muisti_testkit::redis_keys::base_url();
    let rest = url.split("://").nth(1).unwrap_or_default();
    let host = rest.split(['/', '?']).next().unwrap_or_default();
    let host = host.rsplit('@').next().unwrap_or(host);
    std::net::TcpStream::connect(host).is_ok()
}

/// A usage error for a required argument or subcommand left out: the prose names the
/// command, the reader does not run it so.
fn is_mention(err: &str) -> bool {
    err.contains("required arguments were not provided")
        || err.contains("a value is required for")
        || err.contains("requires a subcommand")
        || err.contains("Usage: muisti") && !err.contains("unexpected argument")
}

/// The commands of a line: one command, or several joined by `&&` or `|` (a pipe feeds the
/// next one's input). Alternatives (`a|b` inside a word) give one command each.
fn commands_of(line: &str) -> Vec<Vec<(String, bool)>> {
    let mut steps = Vec::new();
    let mut rest = line.to_owned();
    let mut piped = false;
    loop {
        let next = [(" && muisti ", false), (" | muisti ", true)]
            .iter()
            .filter_map(|(sep, pipe)| rest.find(sep).map(|at| (at, *sep, *pipe)))
            .min_by_key(|(at, _, _)| *at);
        match next {
            Some((at, sep, pipe)) => {
                steps.push((rest[..at].to_owned(), piped));
                rest = format!("muisti {}", &rest[at + sep.len()..]);
                piped = pipe;
            }
            None => {
                steps.push((rest, piped));
                break;
            }
        }
    }
    // `a|b` in a word outside quotes: one line per alternative.
    let mut lines = vec![steps];
    loop {
        let mut expanded = Vec::new();
        let mut changed = false;
        for steps in &lines {
            let alternative = steps.iter().enumerate().find_map(|(i, (c, _))| {
                c.split_whitespace()
                    .find(|w| w.contains('|') && !w.contains('"') && !w.contains('\''))
                    .map(|w| (i, w.to_owned()))
            });
            match alternative {
                Some((i, word)) => {
                    changed = true;
                    let bare = word.trim_start_matches('[').trim_end_matches(']');
                    for choice in bare.split('|').filter(|c| !c.is_empty()) {
                        let mut copy = steps.clone();
                        copy[i].0 = copy[i].0.replacen(&word, choice, 1);
                        expanded.push(copy);
                    }
                }
                None => expanded.push(steps.clone()),
            }
        }
        lines = expanded;
        if !changed || lines.len() > 64 {
            return lines;
        }
    }
}

/// What the commands of some pages came to.
#[derive(Default)]
struct Tally {
    ran: usize,
    mentions: usize,
    skipped: usize,
    failed: Vec<String>,
}

impl Tally {
    /// Runs every command of `page` with a reader of its own.
    fn read_page(&mut self, page: &str, text: &str, fixtures: &Fixtures, model: &Server) {
        let mut reader = Reader::new(fixtures, model);
        for line in documented::commands(text) {
            for steps in commands_of(&line) {
                let mut output = String::new();
                for (command, piped) in steps {
                    let stdin = if piped { output.clone() } else { String::new() };
                    let (outcome, out) = reader.read(&command, stdin.as_bytes());
                    output = out;
                    match outcome {
                        Outcome::Ran => self.ran += 1,
                        Outcome::Mention => self.mentions += 1,
                        Outcome::Skipped => self.skipped += 1,
                        Outcome::Failed(why) => self.failed.push(format!("{page}: {why}")),
                    }
                }
            }
        }
    }
}

#[test]
fn every_documented_command_runs() {
    let fixtures = Fixtures::new();
    let model = model();
    let pages = documented::pages(ROOT);
    // Pages are independent (each reader has its own directory, keys and servers), and
    // most of a command's time is its process starting and waiting on files: two pages at
    // a time, each taken by the first reader free.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                // Named as the test, as the skips it reports name it.
                let named = std::thread::Builder::new()
                    .name(std::thread::current().name().unwrap_or("docs").to_owned());
                named
                    .spawn_scoped(scope, || {
                        let mut tally = Tally::default();
                        while let Some((page, text)) =
                            pages.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                        {
                            tally.read_page(page, text, &fixtures, &model);
                        }
                        tally
                    })
                    .expect("a page's reader starts")
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().expect("a page's reader panicked"))
            .collect()
    });
    let (ran, mentions, skipped) = tallies.iter().fold((0, 0, 0), |(r, m, s), t| {
        (r + t.ran, m + t.mentions, s + t.skipped)
    });
    let failed: Vec<String> = tallies.into_iter().flat_map(|t| t.failed).collect();
    eprintln!("documented commands: {ran} run, {mentions} mentions, {skipped} skipped");
    assert!(
        failed.is_empty(),
        "{} documented commands failed:\n{}",
        failed.len(),
        failed.join("\n\n")
    );
    assert!(ran > 150, "only {ran} documented commands ran");
    assert!(
        mentions * 2 < ran,
        "{mentions} mentions beside {ran} commands run"
    );
}

/// The reader's splitting of a line: `&&` and pipes, and alternatives.
#[test]
fn a_line_gives_each_of_its_commands() {
    let steps = commands_of("muisti export --store a | muisti import --store b");
    assert_eq!(
        steps,
        [vec![
            ("muisti export --store a".to_owned(), false),
            ("muisti import --store b".to_owned(), true)
        ]]
    );
    let alternatives = commands_of("muisti kv has|forget KEY");
    assert_eq!(
        alternatives,
        [
            vec![("muisti kv has KEY".to_owned(), false)],
            vec![("muisti kv forget KEY".to_owned(), false)]
        ]
    );
    assert_eq!(
        commands_of(r#"muisti bench locomo --loco-grid "a|b""#).len(),
        1,
        "quoted"
    );
    assert!(is_mention(
        "error: the following required arguments were not provided:\n  <TEXT>"
    ));
    assert!(!is_mention(
        "error: unexpected argument '-n' found\n\nUsage: muisti"
    ));
}
