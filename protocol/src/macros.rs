//! `wire_enum!`: the closed string enums of the wire, written once.
//!
//! Every such enum derives the same traits, is snake_case (or the spelling its variant names) on the wire, knows the
//! list of its values (`ALL`, which the enum fixtures freeze) and its wire name (`as_str`). With `unknown`, a value
//! that a reader does not know reads as `Unknown` (docs/protocol.md, "Optional members and unknown values"); `Unknown`
//! is then the last entry of `ALL`, so the fixture proves that it round-trips too.

/// Defines a wire enum of plain strings. See the module docs.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash,
            ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema,
        )]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            /// Every value, in the order of the spec.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire name.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $wire, )+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+
        }
        unknown
    ) => {
        $(#[$meta])*
        ///
        /// A value that a reader does not know reads as `Unknown`; a writer never sends it.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash,
            ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema,
        )]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
            /// A value that this reader does not know. Never sent.
            #[serde(rename = "unknown", other)]
            Unknown,
        }

        impl $name {
            /// Every value, in the order of the spec, then `Unknown`.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+ $name::Unknown];

            /// The wire name (`unknown` for `Unknown`).
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $wire, )+
                    Self::Unknown => "unknown",
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// `skip_serializing_if` helper: a flag that is false when absent is skipped when false.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// `skip_serializing_if` helper: a count that is 0 when absent is skipped when 0.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference.
pub(crate) fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// `skip_serializing_if` helper: a count that is 1 when absent is skipped when 1.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference.
pub(crate) fn is_one(value: &u64) -> bool {
    *value == 1
}

/// `default` helper: a count that is 1 when absent.
pub(crate) const fn one() -> u64 {
    1
}

/// `skip_serializing_if` helper: a flag that is true when absent is skipped when true.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference.
pub(crate) fn is_true(value: &bool) -> bool {
    *value
}

/// `default` helper: a flag that is true when absent.
pub(crate) const fn yes() -> bool {
    true
}

pub(crate) use wire_enum;
