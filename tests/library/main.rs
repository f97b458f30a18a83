//! The library against published vectors and corpora: the canonical hash, the lock
//! reader and writer, the classifier, screening and rewording corpora, the guard's
//! routing seam, the fuzz targets' regressions and the source tree's layers. No
//! server, no binary. Each area has a module of its own beside this file.

mod classify_corpus;
mod fuzz_regressions;
mod guard_seam;
mod hash_vectors;
mod json_fast_path;
mod lock_roundtrip;
mod module_layers;
mod rewording_corpus;
mod screening_corpus;
mod surface_vectors;
