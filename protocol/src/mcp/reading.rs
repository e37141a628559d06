//! Hand-written readers for the results every tool call decodes.
//!
//! A call's answer is decoded on every call, so the two types in it read in
//! one pass instead of as derived: [`ContentBlock`]'s derived untagged
//! reader buffered every block into serde's intermediate form and tried
//! each variant against it (the largest part of decoding a result), and
//! [`CallToolResult`]'s derived `#[serde(flatten)]` reader buffered the
//! members it does not model the same way. Each reads exactly as its derive
//! did — the same values, the same error texts — which the tests hold
//! against the derives themselves.

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{CallToolResult, ContentBlock, TextTag};

/// Reads a result as `#[derive(Deserialize)]` with `#[serde(flatten)]`
/// did: `content`, `structuredContent` and `isError` by name (each at most
/// once: a second is the derive's "duplicate field" error), every other
/// member into `extra` (the last of a repeated one wins), anything but an
/// object refused as "expected struct CallToolResult".
impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ResultVisitor)
    }
}

/// A result member's name; the modelled ones told apart without allocating.
enum ResultKey {
    Content,
    StructuredContent,
    IsError,
    Other(String),
}

impl<'de> Deserialize<'de> for ResultKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = ResultKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<ResultKey, E> {
                Ok(match key {
                    "content" => ResultKey::Content,
                    "structuredContent" => ResultKey::StructuredContent,
                    "isError" => ResultKey::IsError,
                    other => ResultKey::Other(other.to_string()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct ResultVisitor;

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = CallToolResult;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("struct CallToolResult")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<CallToolResult, A::Error> {
        let mut content: Option<Vec<ContentBlock>> = None;
        let mut structured_content: Option<Option<Value>> = None;
        let mut is_error: Option<Option<bool>> = None;
        let mut extra = Map::new();
        while let Some(key) = members.next_key::<ResultKey>()? {
            match key {
                ResultKey::Content if content.is_some() => return Err(de::Error::duplicate_field("content")),
                ResultKey::Content => content = Some(members.next_value()?),
                ResultKey::StructuredContent if structured_content.is_some() => {
                    return Err(de::Error::duplicate_field("structuredContent"))
                }
                ResultKey::StructuredContent => structured_content = Some(members.next_value()?),
                ResultKey::IsError if is_error.is_some() => return Err(de::Error::duplicate_field("isError")),
                ResultKey::IsError => is_error = Some(members.next_value()?),
                ResultKey::Other(key) => {
                    extra.insert(key, members.next_value()?);
                }
            }
        }
        Ok(CallToolResult {
            content: content.unwrap_or_default(),
            structured_content: structured_content.flatten(),
            is_error: is_error.flatten(),
            extra,
        })
    }
}

/// Reads a block in one pass, deciding the variant exactly as
/// `#[serde(untagged)]` did: a JSON object whose `type` reads as
/// [`TextTag`] and whose `text` is a string is [`ContentBlock::Text`], unless
/// either member appears twice (the derived `Text` variant refused
/// duplicates); any other object is [`ContentBlock::Other`], with the last of
/// any repeated members; anything but an object is the untagged error.
impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The error is made here, after the value was read, as the derive
        // made it: made inside the visitor, serde_json would add a position.
        deserializer
            .deserialize_any(BlockVisitor)?
            .ok_or_else(|| de::Error::custom("data did not match any variant of untagged enum ContentBlock"))
    }
}

/// Reads a block; `None` for a value that is not an object.
struct BlockVisitor;

/// A block member's name; the two that decide the variant are told apart
/// without allocating.
enum BlockKey {
    Type,
    Text,
    Other(String),
}

impl<'de> Deserialize<'de> for BlockKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = BlockKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<BlockKey, E> {
                Ok(match key {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Text,
                    other => BlockKey::Other(other.to_string()),
                })
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<BlockKey, E> {
                Ok(match key.as_str() {
                    "type" => BlockKey::Type,
                    "text" => BlockKey::Text,
                    _ => BlockKey::Other(key),
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Option<ContentBlock>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Self::Value, A::Error> {
        let mut kind: Option<BlockType> = None;
        let mut text: Option<Value> = None;
        let mut repeated = false;
        let mut extra = Map::new();
        while let Some(key) = members.next_key::<BlockKey>()? {
            match key {
                BlockKey::Type => repeated |= kind.replace(members.next_value()?).is_some(),
                BlockKey::Text => repeated |= text.replace(members.next_value()?).is_some(),
                BlockKey::Other(key) => {
                    extra.insert(key, members.next_value()?);
                }
            }
        }
        let is_text = !repeated
            && matches!(text, Some(Value::String(_)))
            && match &kind {
                Some(BlockType::Text) => true,
                Some(BlockType::Other(kind)) => TextTag::deserialize(kind).is_ok(),
                None => false,
            };
        match (kind, text) {
            (Some(_), Some(Value::String(text))) if is_text => {
                Ok(Some(ContentBlock::Text { kind: TextTag::Text, text, extra }))
            }
            (kind, text) => {
                extra.extend(kind.map(|kind| ("type".to_string(), kind.into_value())));
                extra.extend(text.map(|text| ("text".to_string(), text)));
                Ok(Some(ContentBlock::Other(extra)))
            }
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut items: A) -> Result<Self::Value, A::Error> {
        // Read to the end, as the untagged derive did, so a bad value inside
        // is reported as such.
        while items.next_element::<Value>()?.is_some() {}
        Ok(None)
    }
}

/// A block's `type` as read: `"text"` is told apart without allocating
/// (it is the type of nearly every block); any other value is kept as sent.
enum BlockType {
    Text,
    Other(Value),
}

impl BlockType {
    fn into_value(self) -> Value {
        match self {
            BlockType::Text => Value::from("text"),
            BlockType::Other(value) => value,
        }
    }
}

impl<'de> Deserialize<'de> for BlockType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TypeVisitor;
        impl<'de> Visitor<'de> for TypeVisitor {
            type Value = BlockType;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, kind: &str) -> Result<BlockType, E> {
                Ok(if kind == "text" { BlockType::Text } else { BlockType::Other(Value::from(kind)) })
            }
            fn visit_bool<E: de::Error>(self, kind: bool) -> Result<BlockType, E> {
                Ok(BlockType::Other(Value::from(kind)))
            }
            fn visit_i64<E: de::Error>(self, kind: i64) -> Result<BlockType, E> {
                Ok(BlockType::Other(Value::from(kind)))
            }
            fn visit_u64<E: de::Error>(self, kind: u64) -> Result<BlockType, E> {
                Ok(BlockType::Other(Value::from(kind)))
            }
            fn visit_f64<E: de::Error>(self, kind: f64) -> Result<BlockType, E> {
                Ok(BlockType::Other(Value::from(kind)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<BlockType, E> {
                Ok(BlockType::Other(Value::Null))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, items: A) -> Result<BlockType, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(items)).map(BlockType::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, members: A) -> Result<BlockType, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(members)).map(BlockType::Other)
            }
        }
        deserializer.deserialize_any(TypeVisitor)
    }
}
