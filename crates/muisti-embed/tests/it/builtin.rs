//! The built-in static embedder reproduces model2vec's own vectors.

use muisti_embed::{Embedder, StaticEmbedder};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    text: String,
    vector: Vec<f32>,
}

#[test]
fn builtin_matches_model2vec_reference_vectors() {
    let refs: Vec<Reference> =
        serde_json::from_str(include_str!("../../model/reference.json")).expect("reference");
    let e = StaticEmbedder::builtin().expect("loads");
    assert_eq!(e.dimensions(), 256);
    for r in refs {
        let v = e.embed_one(&r.text).expect("embeds");
        assert_eq!(v.len(), r.vector.len());
        let max_diff = v
            .iter()
            .zip(&r.vector)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        // The reference is float16 (model2vec averages in half precision).
        assert!(max_diff < 3e-3, "{:?}: max difference {max_diff}", r.text);
    }
}

#[test]
fn meaning_beats_unrelated_text() {
    let e = StaticEmbedder::builtin().expect("loads");
    let v = e
        .embed(&[
            "which city does the user live in now",
            "I moved to Lisbon in March",
            "My favourite food is grilled sardines",
        ])
        .expect("embeds");
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]));
    let norm = dot(&v[1], &v[1]).sqrt();
    assert!((norm - 1.0).abs() < 1e-4);
}
