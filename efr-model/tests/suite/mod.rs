mod model_catalog;
mod model_parse;
mod model_provider;
