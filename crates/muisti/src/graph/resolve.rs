//! Entity resolution: which entity a name means. In order: the normalised exact name; an
//! alias (a name an entity was also called, or a short form of its name: its first or last
//! word, its initials, its name without "Inc" or "University"); then, for a name of several
//! words, an entity called by one of its words, its initials or its short form ("Sam" for
//! "Sam Okafor", "MIT" for "Massachusetts Institute of Technology"). A short form two
//! entities share ("Alice" for Alice Chen and Alice Moreno) resolves to neither. Aliases
//! are records keyed by user and name, so each step is a point read.

use muisti_core::{Result, content_hash};

use super::Graph;
use super::keys::entity_key;
use super::{Entity, kind, normalize_name};
use crate::records::{self, Alias};

/// Words that say what kind of thing a name is, not which: never a short form alone
/// ("Lake" of "Lake Victoria", "University" of "Stanford University").
const GENERIC: &[&str] = &[
    "lake",
    "mount",
    "mt",
    "river",
    "sea",
    "bay",
    "island",
    "park",
    "street",
    "st",
    "road",
    "avenue",
    "square",
    "city",
    "county",
    "state",
    "new",
    "san",
    "los",
    "las",
    "santa",
    "saint",
    "north",
    "south",
    "east",
    "west",
    "upper",
    "lower",
    "great",
    "united",
    "national",
    "royal",
    "general",
    "central",
    "university",
    "college",
    "school",
    "institute",
    "hospital",
    "clinic",
    "bank",
    "church",
    "club",
    "team",
    "group",
    "department",
    "lab",
    "project",
    "center",
    "centre",
    "museum",
    "airport",
    "station",
    "hotel",
    "cafe",
    "restaurant",
    "company",
    "corporation",
    "corp",
    "inc",
    "ltd",
    "llc",
    "co",
    "of",
    "the",
    "and",
    "de",
    "for",
];

/// Endings that make a name another thing than its first word: "Chicago Marathon" is not
/// "Chicago", "Union Square" not "Union".
const PLACE_OR_EVENT_ENDINGS: &[&str] = &[
    "marathon",
    "festival",
    "conference",
    "summit",
    "cup",
    "open",
    "games",
    "airport",
    "bridge",
    "park",
    "street",
    "road",
    "avenue",
    "lane",
    "river",
    "square",
    "station",
    "mall",
    "stadium",
    "hall",
    "theatre",
    "theater",
    "museum",
    "hotel",
    "navigator",
    "tower",
    "building",
    "beach",
    "trail",
    "day",
    "week",
    "awards",
    "show",
];

/// Endings that name a kind of organisation: "Acme Corp" is "Acme".
const ORG_ENDINGS: &[&str] = &[
    "inc",
    "corp",
    "corporation",
    "company",
    "co",
    "ltd",
    "llc",
    "plc",
    "gmbh",
    "group",
    "university",
    "college",
    "hospital",
];

/// The short forms of a name under which it is also found: its first and last words
/// (unless a joining word such as "of" is in it, or they are [`GENERIC`]), its initials
/// ("NYC", "SF"), and its name without an organisation's ending ("Acme" of "Acme Corp").
/// Normalised; none for a one-word name.
fn short_forms(name: &str) -> Vec<String> {
    let words: Vec<&str> = name.split_whitespace().collect();
    if words.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    // "Bank of America" is not "America": a name with a joining word has no word forms.
    let joined = words
        .iter()
        .any(|w| ["of", "de", "and", "for", "the"].contains(w));
    let last = normalize_name(words[words.len() - 1]);
    let first_too = !PLACE_OR_EVENT_ENDINGS.contains(&last.as_str());
    let word_forms = [(words[0], first_too), (words[words.len() - 1], true)];
    for w in word_forms
        .into_iter()
        .filter(|(_, ok)| *ok && !joined)
        .map(|(w, _)| w)
    {
        let n = normalize_name(w.trim_end_matches(['.', ',']));
        if n.chars().count() > 1 && !GENERIC.contains(&n.as_str()) {
            out.push(n);
        }
    }
    let initials: String = words
        .iter()
        .filter(|w| w.starts_with(|c: char| c.is_uppercase()))
        .filter_map(|w| w.chars().next())
        .collect();
    // Initials of three words or more ("NYC"), or of a place's two ("SF").
    let first = normalize_name(words[0]);
    if initials.chars().count() >= 2 && (words.len() >= 3 || GENERIC.contains(&first.as_str())) {
        out.push(initials.to_lowercase());
    }
    if let Some(core) = core_name(name) {
        out.push(core);
    }
    out.sort();
    out.dedup();
    out.retain(|s| *s != normalize_name(name));
    out
}

/// A name without its organisation's ending ("acme" of "Acme Corp"), normalised.
fn core_name(name: &str) -> Option<String> {
    let words: Vec<&str> = name.split_whitespace().collect();
    let (last, rest) = words.split_last()?;
    (!rest.is_empty() && ORG_ENDINGS.contains(&normalize_name(last).as_str()))
        .then(|| normalize_name(&rest.join(" ")))
}

/// Whether entities of these kinds may be one (a name first seen bare is `other`).
fn kinds_agree(a: &str, b: &str) -> bool {
    a == b || a == kind::OTHER || b == kind::OTHER
}

impl Graph<'_> {
    /// The entity a user's memories call `name`: its own name, else an alias that leads to
    /// one entity (two point reads at most).
    pub fn entity(&self, user: Option<&str>, name: &str) -> Result<Option<Entity>> {
        if let Some(e) = self.graph_record(&records::ENTITIES, &entity_key(user, name))? {
            return Ok(Some(e));
        }
        match self.graph_record(&records::ALIASES, &alias_key(user, name))? {
            Some(Alias::Entity(to)) => {
                self.graph_record(&records::ENTITIES, &entity_key(user, &to))
            }
            _ => Ok(None),
        }
    }

    /// The entity a newly read name of kind `kind` means ([module docs](self)), if any.
    pub(crate) fn resolve_entity(
        &self,
        user: Option<&str>,
        name: &str,
        kind_of: &str,
        chooser: Option<Chooser<'_>>,
    ) -> Result<Option<Entity>> {
        if let Some(e) = self.entity(user, name)? {
            return Ok(Some(e));
        }
        // A name several entities go by: the model, if there is one, reads which.
        if let Some(chooser) = chooser
            && let Some(Alias::Among(names)) =
                self.graph_record(&records::ALIASES, &alias_key(user, name))?
        {
            let mut candidates = Vec::new();
            for n in &names {
                let key = entity_key(user, n);
                if let Some(e) = self.graph_record(&records::ENTITIES, &key)? {
                    candidates.push(e);
                }
            }
            let chosen = chooser
                .extractor
                .choose(name, chooser.text, &candidates)
                .map_err(|e| muisti_core::Error::Backend {
                    backend: "graph",
                    reason: e.to_string(),
                })?;
            if let Some(e) = chosen.and_then(|i| candidates.into_iter().nth(i)) {
                return Ok(Some(e));
            }
        }
        // "Acme Corp" after "Acme Corporation": one organisation, by their core name.
        if let Some(core) = core_name(name)
            && let Some(e) = self.entity(user, &core)?
            && kinds_agree(&e.kind, kind_of)
        {
            return Ok(Some(e));
        }
        for short in short_forms(name) {
            let key = entity_key(user, &short);
            if let Some(e) = self.graph_record(&records::ENTITIES, &key)?
                && kinds_agree(&e.kind, kind_of)
            {
                return Ok(Some(e));
            }
        }
        Ok(None)
    }

    /// Records that `name` (the entity's own or a new alias) leads to `e`: the name itself
    /// when it is an alias, and its short forms; a short form that already leads elsewhere
    /// becomes ambiguous.
    pub(crate) fn register_aliases(&self, e: &Entity, name: &str) -> Result<()> {
        let user = e.user_id.as_deref();
        let own = normalize_name(&e.name);
        let mut names = short_forms(name);
        if normalize_name(name) != own {
            names.push(normalize_name(name));
        }
        for n in names {
            if n == own {
                continue;
            }
            let key = alias_key(user, &n);
            let now = match self.graph_record(&records::ALIASES, &key)? {
                None => Alias::Entity(e.name.clone()),
                Some(Alias::Entity(to)) if normalize_name(&to) == own => continue,
                // Leading elsewhere, but that entity is gone: this one takes it.
                Some(Alias::Entity(to))
                    if self
                        .graph_record(&records::ENTITIES, &entity_key(user, &to))?
                        .is_none() =>
                {
                    Alias::Entity(e.name.clone())
                }
                Some(Alias::Entity(to)) => Alias::Among(vec![to, e.name.clone()]),
                Some(Alias::Among(mut all)) => {
                    if all.iter().any(|a| normalize_name(a) == own) {
                        continue;
                    }
                    all.push(e.name.clone());
                    Alias::Among(all)
                }
                Some(Alias::Ambiguous) => continue,
            };
            self.put_graph_record(&records::ALIASES, &key, user, &now, Vec::new())?;
        }
        Ok(())
    }

    /// Deletes the aliases that lead to `e` (it is being deleted).
    pub(crate) fn forget_aliases(&self, e: &Entity) -> Result<()> {
        let user = e.user_id.as_deref();
        let own = normalize_name(&e.name);
        let mut names: Vec<String> = short_forms(&e.name);
        for a in &e.aliases {
            names.push(normalize_name(a));
            names.extend(short_forms(a));
        }
        for n in names {
            let key = alias_key(user, &n);
            match self.graph_record(&records::ALIASES, &key)? {
                Some(Alias::Entity(to)) if normalize_name(&to) == own => {
                    self.delete_graph_record(&records::ALIASES, &key)?;
                }
                Some(Alias::Among(mut all)) if all.iter().any(|a| normalize_name(a) == own) => {
                    all.retain(|a| normalize_name(a) != own);
                    // One left: the name is theirs alone again.
                    let now = match all.len() {
                        1 => Alias::Entity(all.remove(0)),
                        _ => Alias::Among(all),
                    };
                    self.put_graph_record(&records::ALIASES, &key, user, &now, Vec::new())?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// What reads an ambiguous name: the extractor (a model chooses; the offline one does
/// not) and the text of the memory that names it.
#[derive(Clone, Copy)]
pub(crate) struct Chooser<'a> {
    pub(crate) extractor: &'a dyn super::GraphExtractor,
    pub(crate) text: &'a str,
}

/// An alias record's key: its user and normalised name.
fn alias_key(user: Option<&str>, name: &str) -> String {
    let n = normalize_name(name);
    let whole = format!("l|{}|{n}", super::keys::user_part(user));
    if whole.chars().count() <= 200 {
        whole
    } else {
        format!("l|{}|#{}", super::keys::user_part(user), content_hash(&n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_of_names() {
        assert_eq!(short_forms("Priya Sharma"), vec!["priya", "sharma"]);
        assert_eq!(
            short_forms("Massachusetts Institute of Technology"),
            vec!["mit"]
        );
        assert_eq!(short_forms("Acme Corp"), vec!["acme"]);
        assert_eq!(short_forms("Lake Victoria"), vec!["lv", "victoria"]);
        assert_eq!(short_forms("New York City"), vec!["nyc"]);
        assert_eq!(short_forms("San Francisco"), vec!["francisco", "sf"]);
        assert_eq!(short_forms("Bank of America"), vec!["ba"]);
        assert!(short_forms("Google").is_empty());
    }
}
