//! OpenAPI schemas for hand-serialized wire types (feature `openapi`).
//!
//! Most wire types derive `utoipa::ToSchema` behind the `openapi` feature of
//! their crate. A type with its own `Serialize` (a string-or-array field, an
//! open enum with an `Other` value, a block keyed by `type` with an
//! `Unknown` fallback) states its JSON shape beside that impl with
//! [`impl_to_schema!`](crate::impl_to_schema) and these builders.

use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// The named schemas a type refers to, as [`ToSchema::schemas`] collects them.
pub type Schemas = Vec<(String, RefOr<Schema>)>;

/// A `$ref` to `T`'s named schema.
pub fn reference<T: ToSchema>() -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(T::name()))
}

/// `T`'s schema and the schemas it uses, for [`ToSchema::schemas`]. A name
/// already collected is not followed again, which ends the walk through
/// recursive types (a tool result holds content blocks, which hold tool
/// results).
pub fn register<T: ToSchema>(out: &mut Vec<(String, RefOr<Schema>)>) {
    let name = T::name();
    if out.iter().any(|(known, _)| *known == name) {
        return;
    }
    out.push((name.into_owned(), <T as PartialSchema>::schema()));
    T::schemas(out);
}

/// A string.
pub fn string() -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).into()
}

/// A string with known values that may grow: the known ones are listed as
/// examples, not as an `enum`, so a new value stays valid.
pub fn open_string(known: &[&str], description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .examples(known.iter().copied())
        .into()
}

/// Any JSON object, described.
pub fn object(description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .into()
}

/// An array of `item`.
pub fn array_of(item: RefOr<Schema>) -> RefOr<Schema> {
    ArrayBuilder::new().items(item).into()
}

/// `{"type": "<tag>", ...fields of T}`: a member of a union keyed by `type`
/// whose Rust type carries only the fields.
pub fn tagged<T: ToSchema>(tag: &str) -> RefOr<Schema> {
    let kind = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "type",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([tag])),
        )
        .required("type");
    AllOfBuilder::new().item(kind).item(reference::<T>()).into()
}

/// One of `items`, described.
pub fn one_of(items: impl IntoIterator<Item = RefOr<Schema>>, description: &str) -> RefOr<Schema> {
    let mut builder = OneOfBuilder::new().description(Some(description));
    for item in items {
        builder = builder.item(item);
    }
    builder.into()
}

/// Any of `items`: for an open union, whose catch-all member overlaps the
/// typed ones.
pub fn any_of(items: impl IntoIterator<Item = RefOr<Schema>>, description: &str) -> RefOr<Schema> {
    let mut builder = AnyOfBuilder::new().description(Some(description));
    for item in items {
        builder = builder.item(item);
    }
    builder.into()
}

/// Implement `utoipa::ToSchema` for a hand-serialized type: its component
/// name, the named types its schema refers to, and the schema.
///
/// ```text
/// #[cfg(feature = "openapi")]
/// router_canonical::impl_to_schema!(MessageContent as "ChatMessageContent", uses [ContentPart],
///     openapi::one_of([openapi::string(), openapi::array_of(openapi::reference::<ContentPart>())], "..."));
/// ```
#[macro_export]
macro_rules! impl_to_schema {
    ($ty:ty as $name:literal, uses [$($dep:ty),* $(,)?], $schema:expr) => {
        impl ::utoipa::PartialSchema for $ty {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $schema
            }
        }
        impl ::utoipa::ToSchema for $ty {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed($name)
            }
            fn schemas(
                out: &mut ::std::vec::Vec<(
                    ::std::string::String,
                    ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema>,
                )>,
            ) {
                let _ = &out;
                $($crate::openapi::register::<$dep>(out);)*
            }
        }
    };
}
