//! What an endpoint says about itself in the OpenAPI document: the `api` of a
//! route row (summary, query and header parameters, body, replies
//! with their headers, the errors its handler can answer) and the component
//! schemas it names, taken from the types' `ToSchema` (`Schemas`).
//!
//! Everything here is constant data, so a description is one literal;
//! `document` turns a list of them into the document.

use router_canonical::ErrorCode;
use std::collections::BTreeMap;
use utoipa::ToSchema;
use utoipa::openapi::schema::{
    AdditionalProperties, KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr, Schema};

/// A schema of the document, registered in `Schemas` when it is a component.
pub type SchemaOf = fn(&mut Schemas) -> RefOr<Schema>;

/// An endpoint's description.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    pub summary: &'static str,
    /// The group it is listed under.
    pub tag: &'static str,
    pub params: &'static [Param],
    pub body: Option<RequestBody>,
    /// Its successful answers (and any other it answers without an error
    /// envelope, as `/readyz`'s 503).
    pub replies: &'static [Reply],
    /// The codes the handler itself may answer; the guard's and the path
    /// check's follow from the row's rules.
    pub errors: &'static [ErrorCode],
}

impl Operation {
    /// An operation with a summary and tag and nothing else yet.
    pub const fn new(summary: &'static str, tag: &'static str) -> Operation {
        Operation {
            summary,
            tag,
            params: &[],
            body: None,
            replies: &[],
            errors: &[],
        }
    }
}

/// Where a parameter rides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    Query,
    Header,
}

/// A query or header parameter (path parameters follow from the row).
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub place: In,
    pub required: bool,
    pub schema: SchemaOf,
    pub description: &'static str,
}

impl Param {
    /// A query parameter the request may leave out.
    pub const fn query(name: &'static str, schema: SchemaOf, description: &'static str) -> Param {
        Param {
            name,
            place: In::Query,
            required: false,
            schema,
            description,
        }
    }

    /// A request header the request may leave out.
    pub const fn header(name: &'static str, schema: SchemaOf, description: &'static str) -> Param {
        Param {
            place: In::Header,
            ..Param::query(name, schema, description)
        }
    }

    /// The same parameter, which the request must carry.
    pub const fn required(self) -> Param {
        Param {
            required: true,
            ..self
        }
    }
}

/// The request body, in each content type it may come as.
#[derive(Debug, Clone, Copy)]
pub struct RequestBody {
    pub description: &'static str,
    /// `false`: the body may be empty.
    pub required: bool,
    pub content: &'static [(&'static str, SchemaOf)],
    /// The content types of a multipart body's parts, by part name.
    pub parts: &'static [(&'static str, &'static str)],
}

/// One answer: its status, body in each content type (none: no body) and
/// the headers it sets beyond the ones every answer carries.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    pub status: u16,
    pub description: &'static str,
    pub content: &'static [(&'static str, SchemaOf)],
    pub headers: &'static [Header],
}

/// A response header.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: SchemaOf,
}

impl Header {
    /// A header named `name`, its value as `schema` describes.
    pub const fn new(name: &'static str, schema: SchemaOf, description: &'static str) -> Header {
        Header {
            name,
            description,
            schema,
        }
    }
}

/// The JSON content type, as rows name it.
pub const JSON: &str = "application/json";

/// A reply of status `status` with a JSON body.
pub const fn json(
    status: u16,
    description: &'static str,
    content: &'static [(&'static str, SchemaOf)],
) -> Reply {
    Reply {
        status,
        description,
        content,
        headers: &[],
    }
}

/// A reply of status `status` without a body.
pub const fn empty(status: u16, description: &'static str) -> Reply {
    Reply {
        status,
        description,
        content: &[],
        headers: &[],
    }
}

/// The component schemas the operations reference, by name.
#[derive(Default)]
pub struct Schemas {
    pub by_name: BTreeMap<String, RefOr<Schema>>,
    /// Names given to two different schemas (a test keeps this empty: the
    /// wire crates prefix their types' names for that).
    pub clashes: Vec<String>,
}

impl Schemas {
    /// A reference to `T`'s schema, registered with the schemas it uses.
    pub fn of<T: ToSchema>(&mut self) -> RefOr<Schema> {
        let mut used = Vec::new();
        T::schemas(&mut used);
        let name = T::name().into_owned();
        used.push((name.clone(), T::schema()));
        for (name, mut schema) in used {
            drop_refused_defaults(&mut schema);
            if let Some(old) = self.by_name.insert(name.clone(), schema.clone())
                && old != schema
            {
                self.clashes.push(name);
            }
        }
        RefOr::Ref(Ref::from_schema_name(name))
    }
}

/// Removes a `default: null` its schema's type refuses. A wire type read
/// with `#[serde(default)]` gets every field's `Default` as its default,
/// `null` for an `Option`, also where the field is required and not
/// nullable (`model`, `messages`): no default at all is the truth there.
fn drop_refused_defaults(schema: &mut RefOr<Schema>) {
    let RefOr::T(schema) = schema else {
        return;
    };
    let takes_null = |ty: &SchemaType| match ty {
        SchemaType::Type(ty) => *ty == Type::Null,
        SchemaType::Array(types) => types.contains(&Type::Null),
        SchemaType::AnyValue => true,
    };
    match schema {
        Schema::Object(object) => {
            if object.default == Some(serde_json::Value::Null) && !takes_null(&object.schema_type) {
                object.default = None;
            }
            for property in object.properties.values_mut() {
                drop_refused_defaults(property);
            }
        }
        Schema::Array(array)
            if array.default == Some(serde_json::Value::Null)
                && !takes_null(&array.schema_type) =>
        {
            array.default = None;
        }
        _ => {}
    }
}

/// `T`'s component schema, as a row names it: `schema::<ChatRequest>`.
pub fn schema<T: ToSchema>(schemas: &mut Schemas) -> RefOr<Schema> {
    schemas.of::<T>()
}

/// `T`'s schema with no members beyond its properties, plus the routing
/// fields every inference body takes (`min_discount_percent`, `zdr`): for a
/// wire request whose catch-all map the client codec refuses (Messages).
pub fn closed_inference<T: ToSchema>(schemas: &mut Schemas) -> RefOr<Schema> {
    let reference = open_inference::<T>(schemas);
    if let Some(RefOr::T(Schema::Object(object))) = schemas.by_name.get_mut(T::name().as_ref()) {
        object.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
    }
    reference
}

/// `T`'s schema plus the routing fields every inference body takes
/// (`min_discount_percent`, `zdr`): the gateway's members, which the wire
/// crates' types do not describe.
pub fn open_inference<T: ToSchema>(schemas: &mut Schemas) -> RefOr<Schema> {
    let reference = schemas.of::<T>();
    if let Some(RefOr::T(Schema::Object(object))) = schemas.by_name.get_mut(T::name().as_ref()) {
        object.properties.insert(
            "min_discount_percent".into(),
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .minimum(Some(0))
                .maximum(Some(99.99))
                .description(Some("Only routes at least this far below the list price."))
                .into(),
        );
        object.properties.insert(
            "zdr".into(),
            ObjectBuilder::new()
                .schema_type(Type::Boolean)
                .description(Some("Only zero-data-retention routes."))
                .into(),
        );
    }
    reference
}

/// Any string.
pub fn string(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).into()
}

/// A non-empty string.
pub fn non_empty(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .into()
}

/// A UUID.
pub fn uuid(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::Custom("uuid".into())))
        .into()
}

/// A non-negative integer (seconds, counts).
pub fn count(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(0))
        .into()
}

/// Bytes of a file (a video, an uploaded image).
pub fn binary(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::Custom("binary".into())))
        .into()
}

/// Any JSON object (only the OpenAPI document itself is described so).
pub fn any_object(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::Object).into()
}

/// One of `values`.
pub fn one_of(values: &'static [&'static str]) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .into()
}

/// An integer from `min` to `max`; a row's schema adds a default, if any,
/// and converts it (`.into()`).
pub fn integer_range(min: i64, max: i64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(min))
        .maximum(Some(max))
}

/// A string matching the regular expression `pattern`.
pub fn text_matching(pattern: &'static str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
}

/// A string in one of OpenAPI's known formats (`date`, `date-time`, `uuid`).
pub fn text_formatted(format: KnownFormat) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(format)))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(schema: RefOr<Schema>) -> serde_json::Value {
        serde_json::to_value(schema).unwrap()
    }

    #[test]
    fn parameters_are_optional_until_required() {
        let query = Param::query("limit", string, "At most this many.");
        assert_eq!((query.place, query.required), (In::Query, false));
        let header = Param::header("anthropic-version", string, "The version.");
        assert_eq!((header.place, header.required), (In::Header, false));
        let required = header.required();
        assert_eq!((required.place, required.required), (In::Header, true));
        assert_eq!(required.name, "anthropic-version");
        assert_eq!(required.description, "The version.");
    }

    #[test]
    fn the_schema_shorthands_say_what_they_are_named() {
        assert_eq!(
            json(integer_range(1, 200).default(Some(50.into())).into()),
            serde_json::json!({"type": "integer", "default": 50, "minimum": 1, "maximum": 200})
        );
        assert_eq!(
            json(text_matching("^[a-z]+$").min_length(Some(1)).into()),
            serde_json::json!({"type": "string", "minLength": 1, "pattern": "^[a-z]+$"})
        );
        assert_eq!(
            json(text_formatted(KnownFormat::Date)),
            serde_json::json!({"type": "string", "format": "date"})
        );
    }
}
