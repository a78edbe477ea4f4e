//! efr-model's integration tests, in one test binary (each file of `suite/` is a module): the stream parsers on the
//! providers' documented streams and on hand-written ones in the documented shapes (`model_parse`), the provider
//! against the scripted model server (`model_provider`), and the catalog (`model_catalog`).

mod suite;
