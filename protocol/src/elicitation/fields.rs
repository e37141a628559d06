//! One field of an elicitation form: what it may hold, read from the
//! schema's `PrimitiveSchemaDefinition`, and the check of a value for it.

use serde_json::{Number, Value};

use super::{AnswerError, RequestError};

/// A form field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its name: the key of its value in the answer.
    pub name: String,
    /// Its `title`, for people.
    pub title: Option<String>,
    /// Its `description`.
    pub description: Option<String>,
    /// Whether an answer must have it (after defaults).
    pub required: bool,
    /// What it holds.
    pub kind: FieldKind,
    /// Its `default`, checked against its kind.
    pub default: Option<Value>,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Free text.
    Text {
        /// `format`, when given.
        format: Option<TextFormat>,
        /// `minLength`.
        min_length: Option<u64>,
        /// `maxLength`.
        max_length: Option<u64>,
    },
    /// A number; `integer` for whole numbers only.
    Number {
        /// `type: integer`.
        integer: bool,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
    },
    /// True or false.
    Boolean,
    /// One of the choices.
    Choice(Vec<Choice>),
    /// Any number of the choices (`type: array`).
    MultiChoice {
        /// The choices.
        choices: Vec<Choice>,
        /// `minItems`.
        min_items: Option<u64>,
        /// `maxItems`.
        max_items: Option<u64>,
    },
}

/// One choice of an enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The value the server gets.
    pub value: String,
    /// Its title for people, when the schema gives one.
    pub title: Option<String>,
}

/// A string field's `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date` (YYYY-MM-DD).
    Date,
    /// `date-time` (RFC 3339).
    DateTime,
}

impl Field {
    pub(super) fn parse(name: &str, property: &Value, required: bool) -> Result<Field, RequestError> {
        let refuse = |why: String| RequestError(format!("elicitation field `{name}`: {why}"));
        let Some(property) = property.as_object() else {
            return Err(refuse("its schema must be an object".into()));
        };
        let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_string);
        let count = |key: &str| property.get(key).and_then(Value::as_u64);
        let bound = |key: &str| property.get(key).and_then(Value::as_f64);
        let kind = match property.get("type").and_then(Value::as_str) {
            Some("string") if property.contains_key("enum") || property.contains_key("oneOf") => {
                FieldKind::Choice(choices_of(property).map_err(refuse)?)
            }
            Some("string") => FieldKind::Text {
                format: match property.get("format").and_then(Value::as_str) {
                    None => None,
                    Some("email") => Some(TextFormat::Email),
                    Some("uri") => Some(TextFormat::Uri),
                    Some("date") => Some(TextFormat::Date),
                    Some("date-time") => Some(TextFormat::DateTime),
                    Some(other) => {
                        return Err(refuse(format!(
                            "string format `{other}` is not allowed; use email, uri, date or date-time"
                        )))
                    }
                },
                min_length: count("minLength"),
                max_length: count("maxLength"),
            },
            Some(kind @ ("number" | "integer")) => {
                FieldKind::Number { integer: kind == "integer", minimum: bound("minimum"), maximum: bound("maximum") }
            }
            Some("boolean") => FieldKind::Boolean,
            Some("array") => {
                let items = property
                    .get("items")
                    .and_then(Value::as_object)
                    .ok_or_else(|| refuse("an array field needs `items` with `enum` or `anyOf` choices".into()))?;
                FieldKind::MultiChoice {
                    choices: choices_of(items).map_err(refuse)?,
                    min_items: count("minItems"),
                    max_items: count("maxItems"),
                }
            }
            Some(other) => {
                return Err(refuse(format!(
                    "type `{other}` is not allowed; a form field is a string, number, integer, boolean or enum"
                )))
            }
            None => return Err(refuse("it has no `type`".into())),
        };
        let mut field = Field {
            name: name.into(),
            title: text("title"),
            description: text("description"),
            required,
            kind,
            default: None,
        };
        if let Some(default) = property.get("default").filter(|default| !default.is_null()) {
            let default =
                field.check(default.clone()).map_err(|error| refuse(format!("its default is wrong: {error}")))?;
            field.default = Some(default);
        }
        Ok(field)
    }

    /// Checks one value (already not empty) for this field.
    pub(super) fn check(&self, value: Value) -> Result<Value, AnswerError> {
        let wrong = |why: String| Err(AnswerError(format!("`{}` {why}", self.name)));
        match (&self.kind, value) {
            (FieldKind::Text { format, min_length, max_length }, Value::String(text)) => {
                let length = text.chars().count() as u64;
                if min_length.is_some_and(|min| length < min) || max_length.is_some_and(|max| length > max) {
                    return wrong(format!("must be {}; it has {length} characters", self.kind.describe()));
                }
                if let Some(format) = format {
                    if !format.accepts(&text) {
                        return wrong(format!("must be {}; `{text}` is not", self.kind.describe()));
                    }
                }
                Ok(Value::String(text))
            }
            (FieldKind::Number { integer, minimum, maximum }, value) => {
                let number = match &value {
                    Value::Number(number) => number.as_f64(),
                    // A person at a terminal types text.
                    Value::String(text) => text.trim().parse::<f64>().ok(),
                    _ => None,
                };
                let Some(number) = number.filter(|number| number.is_finite()) else {
                    return wrong(format!("must be {}", self.kind.describe()));
                };
                if *integer && number.fract() != 0.0 {
                    return wrong(format!("must be a whole number; {number} is not"));
                }
                if minimum.is_some_and(|min| number < min) || maximum.is_some_and(|max| number > max) {
                    return wrong(format!("must be {}; {number} is not", self.kind.describe()));
                }
                Ok(match value {
                    Value::Number(number) => Value::Number(number),
                    _ if *integer => Value::Number(Number::from(number as i64)),
                    _ => Number::from_f64(number).map_or(Value::Null, Value::Number),
                })
            }
            (FieldKind::Boolean, Value::Bool(flag)) => Ok(Value::Bool(flag)),
            (FieldKind::Boolean, Value::String(text)) => match text.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" => Ok(Value::Bool(true)),
                "false" | "no" | "n" => Ok(Value::Bool(false)),
                _ => wrong(format!("must be true or false; `{text}` is neither")),
            },
            (FieldKind::Choice(choices), Value::String(text)) => match pick(choices, &text) {
                Some(value) => Ok(Value::String(value)),
                None => wrong(format!("must be {}; `{text}` is not one", self.kind.describe())),
            },
            (FieldKind::MultiChoice { choices, min_items, max_items }, Value::Array(items)) => {
                let mut picked = Vec::new();
                for item in items {
                    let Some(value) = item.as_str().and_then(|text| pick(choices, text)) else {
                        return wrong(format!("must hold only {}; {item} is not one", describe_choices(choices)));
                    };
                    picked.push(Value::String(value));
                }
                let count = picked.len() as u64;
                if min_items.is_some_and(|min| count < min) || max_items.is_some_and(|max| count > max) {
                    return wrong(format!("must be {}; it has {count}", self.kind.describe()));
                }
                Ok(Value::Array(picked))
            }
            (_, value) => wrong(format!("must be {}; got {}", self.kind.describe(), crate::json_kind(&value))),
        }
    }
}

impl FieldKind {
    /// What a value must be, in words: "text (an email address)",
    /// "a whole number from 1 to 10", "one of: red, green".
    pub fn describe(&self) -> String {
        match self {
            FieldKind::Text { format, min_length, max_length } => {
                let mut words = String::from("text");
                if let Some(format) = format {
                    words.push_str(match format {
                        TextFormat::Email => " (an email address)",
                        TextFormat::Uri => " (a URI)",
                        TextFormat::Date => " (a date, YYYY-MM-DD)",
                        TextFormat::DateTime => " (a date and time, RFC 3339)",
                    });
                }
                words + &range(" of", *min_length, *max_length, "characters")
            }
            FieldKind::Number { integer, minimum, maximum } => {
                let noun = if *integer { "a whole number" } else { "a number" };
                match (minimum, maximum) {
                    (Some(min), Some(max)) => format!("{noun} from {min} to {max}"),
                    (Some(min), None) => format!("{noun} of at least {min}"),
                    (None, Some(max)) => format!("{noun} of at most {max}"),
                    (None, None) => noun.into(),
                }
            }
            FieldKind::Boolean => "true or false".into(),
            FieldKind::Choice(choices) => describe_choices(choices),
            FieldKind::MultiChoice { choices, min_items, max_items } => {
                format!("a list of {}{}", describe_choices(choices), range(",", *min_items, *max_items, "items"))
            }
        }
    }
}

fn range(lead: &str, min: Option<u64>, max: Option<u64>, unit: &str) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!("{lead} {min} to {max} {unit}"),
        (Some(min), None) => format!("{lead} at least {min} {unit}"),
        (None, Some(max)) => format!("{lead} at most {max} {unit}"),
        (None, None) => String::new(),
    }
}

fn describe_choices(choices: &[Choice]) -> String {
    let values: Vec<&str> = choices.iter().map(|choice| choice.value.as_str()).collect();
    format!("one of: {}", values.join(", "))
}

/// The choice `text` names: its value, or (for a person) its title.
fn pick(choices: &[Choice], text: &str) -> Option<String> {
    choices
        .iter()
        .find(|choice| choice.value == text)
        .or_else(|| choices.iter().find(|choice| choice.title.as_deref().is_some_and(|title| title == text)))
        .map(|choice| choice.value.clone())
}

/// The choices of an enum schema: `enum` (titles from the legacy
/// `enumNames`), or `oneOf`/`anyOf` of `{const, title}`.
fn choices_of(schema: &serde_json::Map<String, Value>) -> Result<Vec<Choice>, String> {
    let choices: Vec<Choice> = if let Some(values) = schema.get("enum") {
        let values = values.as_array().ok_or("`enum` must be a list of strings")?;
        let titles = schema.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let value = value.as_str().ok_or("`enum` must be a list of strings")?;
                let title = titles.and_then(|titles| titles.get(index)).and_then(Value::as_str).map(str::to_string);
                Ok(Choice { value: value.into(), title })
            })
            .collect::<Result<_, &str>>()?
    } else if let Some(options) = schema.get("oneOf").or_else(|| schema.get("anyOf")) {
        let options = options.as_array().ok_or("`oneOf` must be a list of {const, title}")?;
        options
            .iter()
            .map(|option| {
                let value =
                    option.get("const").and_then(Value::as_str).ok_or("each `oneOf` choice needs a string `const`")?;
                let title = option.get("title").and_then(Value::as_str).map(str::to_string);
                Ok(Choice { value: value.into(), title })
            })
            .collect::<Result<_, &str>>()?
    } else {
        return Err("an enum field needs `enum` or `oneOf` choices".into());
    };
    if choices.is_empty() {
        return Err("an enum field needs at least one choice".into());
    }
    Ok(choices)
}

impl TextFormat {
    /// A light check of the shape (the server checks the meaning).
    fn accepts(self, text: &str) -> bool {
        match self {
            TextFormat::Email => text
                .split_once('@')
                .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !text.contains(' ')),
            TextFormat::Uri => text.split_once(':').is_some_and(|(scheme, rest)| {
                !rest.is_empty()
                    && scheme.chars().next().is_some_and(|first| first.is_ascii_alphabetic())
                    && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            }),
            TextFormat::Date => is_date(text),
            TextFormat::DateTime => {
                text.get(..10).is_some_and(is_date) && matches!(text.as_bytes().get(10), Some(b'T' | b't' | b' '))
            }
        }
    }
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes.iter().enumerate().all(|(at, byte)| at == 4 || at == 7 || byte.is_ascii_digit())
        && matches!(text[5..7].parse::<u8>(), Ok(1..=12))
        && matches!(text[8..10].parse::<u8>(), Ok(1..=31))
}
