//! The `muisti` commands the documentation shows (the README and docs/*.md: inline code and
//! command lines of code blocks), as argument lists. Read by the parser's test (every one
//! parses) and by the binary's test that runs them; compiled into both, never into the
//! binary itself.

/// The documents under `root` (the repository): the README and every page of docs/, as
/// (name, text).
pub(crate) fn pages(root: &str) -> Vec<(String, String)> {
    let mut pages = vec![("README.md".to_owned(), format!("{root}/README.md"))];
    let dir = std::fs::read_dir(format!("{root}/docs")).expect("docs/ exists");
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("docs/{}", entry.file_name().to_string_lossy());
            pages.push((name, path.display().to_string()));
        }
    }
    pages.sort();
    pages
        .into_iter()
        .map(|(name, path)| {
            let text = std::fs::read_to_string(&path).expect("readable");
            (name, text)
        })
        .collect()
}

/// The command lines of a page: inline code starting with `muisti `, and lines of code
/// blocks whose first word is the binary (`muisti`, `target/release/muisti`, ...) or that
/// export a `MUISTI_` variable (`export MUISTI_X=v`, kept as written).
pub(crate) fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut continued: Option<String> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            // A line ending in `\` goes on on the next.
            if let Some(open) = continued.take() {
                let joined = format!("{open} {}", line.trim());
                match joined.strip_suffix('\\') {
                    Some(more) => continued = Some(more.trim_end().to_owned()),
                    None => out.push(joined),
                }
                continue;
            }
            let l = line.trim_start().trim_start_matches("$ ");
            // A variable the block sets for the commands after it.
            if l.starts_with("export MUISTI_") {
                out.push(l.to_owned());
                continue;
            }
            let first = l.split_whitespace().next().unwrap_or_default();
            if first == "muisti" || first.ends_with("/muisti") {
                match l.strip_suffix('\\') {
                    Some(more) => continued = Some(more.trim_end().to_owned()),
                    // A cheat sheet's line holds several, set apart by spaces.
                    None => out.extend(l.split("  muisti ").enumerate().map(|(i, c)| {
                        if i == 0 {
                            c.trim().to_owned()
                        } else {
                            format!("muisti {}", c.trim())
                        }
                    })),
                }
            }
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && span.starts_with("muisti ") {
                out.push(span.to_owned());
            }
        }
    }
    out
}

/// A command line split as a shell would (double and single quotes), up to a comment,
/// pipe, redirection or second command.
pub(crate) fn split(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    let end = out
        .iter()
        .position(|w| matches!(w.as_str(), "|" | ">" | "&&" | ";" | "\\") || w.starts_with('#'))
        .unwrap_or(out.len());
    out.truncate(end);
    out
}

/// The placeholders the documents write in capitals where a value goes.
pub(crate) const PLACEHOLDERS: &[&str] = &[
    "N",
    "M",
    "K",
    "W",
    "F",
    "FILE",
    "DIR",
    "PATH",
    "URL",
    "ID",
    "PROPOSAL",
    "CURSOR",
    "ID_OR_KEY",
    "TIME",
    "NAME",
    "KEY",
    "VALUE",
    "QUERY",
    "TEXT",
    "USER",
    "U",
    "NS",
    "T",
    "MODEL",
    "TENANT",
    "ADMIN",
    "SPEC",
    "RUN_ID",
    "L",
    "MODE",
    "KEEP",
    "OTHER",
    "ADDR",
    "URL2",
    "URL2,...",
];

/// A command line as arguments: each placeholder given the value `fill` returns for it
/// (it sees the arguments before it), optional parts (`[--louo]`) taken, `[flags]` and
/// `...` (more arguments) dropped, the binary's path as `muisti`.
pub(crate) fn words(command: &str, mut fill: impl FnMut(&str, &[String]) -> String) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in split(command) {
        let w = w.trim_start_matches('[').trim_end_matches(']');
        let w = match w {
            // After a flag, `...` stands for its value; elsewhere for more arguments.
            "..." if out.last().is_some_and(|p| p.starts_with("--")) => fill("...", &out),
            "flags" | "" | "..." => continue,
            w if PLACEHOLDERS.contains(&w) => fill(w, &out),
            other => other.to_owned(),
        };
        out.push(w);
    }
    if let Some(first) = out.first_mut() {
        *first = "muisti".to_owned();
    }
    out
}
