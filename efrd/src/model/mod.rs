//! Model providers: one provider-neutral request and one `ModelEvent` stream.
