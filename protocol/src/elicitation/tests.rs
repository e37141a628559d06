use serde_json::json;

use super::*;

fn form(schema: Value) -> FormSchema {
    FormSchema::parse(&schema).expect("a schema within the subset")
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().expect("an object").clone()
}

/// The schema the pinned Python SDK renders for a pydantic model with a
/// defaulted string, a Literal enum and an int with bounds.
fn booking() -> FormSchema {
    form(json!({
        "type": "object",
        "title": "Booking",
        "properties": {
            "name": {"type": "string", "title": "Name", "default": "Ada"},
            "size": {"type": "string", "enum": ["small", "large"], "title": "Size"},
            "nights": {"type": "integer", "minimum": 1, "maximum": 14, "title": "Nights", "default": 2},
            "email": {"type": "string", "format": "email"},
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            "extras": {"type": "array", "items": {"enum": ["wifi", "breakfast"]}, "maxItems": 2},
            "smoking": {"type": "boolean", "default": false}
        },
        "required": ["name", "size", "nights"]
    }))
}

#[test]
fn a_form_is_read_in_the_servers_order_with_titles_defaults_and_choices() {
    let schema = booking();
    let names: Vec<&str> = schema.fields.iter().map(|field| field.name.as_str()).collect();
    assert_eq!(names, ["name", "size", "nights", "email", "color", "extras", "smoking"]);
    assert_eq!(schema.fields[0].title.as_deref(), Some("Name"));
    assert_eq!(schema.fields[0].default, Some(json!("Ada")));
    assert!(schema.fields[1].required && !schema.fields[3].required);
    assert_eq!(schema.fields[2].kind.describe(), "a whole number from 1 to 14");
    assert_eq!(schema.fields[4].kind.describe(), "one of: r, g");
    assert_eq!(schema.fields[5].kind.describe(), "a list of one of: wifi, breakfast, at most 2 items");
}

#[test]
fn an_empty_field_takes_its_default_and_a_missing_required_one_is_named() {
    let schema = booking();
    let content = schema.check(object(json!({"size": "large", "name": ""}))).unwrap();
    assert_eq!(content, object(json!({"name": "Ada", "size": "large", "nights": 2, "smoking": false})));
    let error = schema.defaults().unwrap_err();
    assert_eq!(error.to_string(), "`size` is required and has no default; give it a value (one of: small, large)");
}

#[test]
fn answers_that_do_not_fit_are_refused_naming_the_field() {
    let schema = booking();
    let refuse = |content: Value| schema.check(object(content)).unwrap_err().to_string();
    assert_eq!(refuse(json!({"size": "huge"})), "`size` must be one of: small, large; `huge` is not one");
    assert_eq!(
        refuse(json!({"size": "small", "nights": 30})),
        "`nights` must be a whole number from 1 to 14; 30 is not"
    );
    assert_eq!(refuse(json!({"size": "small", "nights": 1.5})), "`nights` must be a whole number; 1.5 is not");
    assert_eq!(
        refuse(json!({"size": "small", "email": "nobody"})),
        "`email` must be text (an email address); `nobody` is not"
    );
    assert_eq!(
        refuse(json!({"size": "small", "smoking": "maybe"})),
        "`smoking` must be true or false; `maybe` is neither"
    );
    assert_eq!(
        refuse(json!({"size": "small", "pets": 1})),
        "the form has no field `pets`; its fields are: name, size, nights, email, color, extras, smoking"
    );
    assert_eq!(
        refuse(json!({"size": "small", "extras": ["wifi", "spa"]})),
        "`extras` must hold only one of: wifi, breakfast; \"spa\" is not one"
    );
}

#[test]
fn a_person_may_type_text_for_numbers_booleans_and_titles_for_choices() {
    let schema = booking();
    let content =
        schema.check(object(json!({"size": "small", "nights": "3", "smoking": "yes", "color": "Green"}))).unwrap();
    assert_eq!(content["nights"], json!(3));
    assert_eq!(content["smoking"], json!(true));
    assert_eq!(content["color"], json!("g"), "a title picks its value");
}

#[test]
fn schemas_outside_the_subset_are_refused_naming_the_field() {
    let refuse = |schema: Value| FormSchema::parse(&schema).unwrap_err().to_string();
    assert_eq!(
        refuse(json!({"type": "object", "properties": {"address": {"type": "object", "properties": {}}}})),
        "elicitation field `address`: type `object` is not allowed; a form field is a string, number, integer, boolean or enum"
    );
    assert_eq!(
        refuse(json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}})),
        "elicitation field `tags`: an enum field needs `enum` or `oneOf` choices"
    );
    assert_eq!(
        refuse(json!({"type": "object", "properties": {"when": {"type": "string", "format": "time"}}})),
        "elicitation field `when`: string format `time` is not allowed; use email, uri, date or date-time"
    );
    assert_eq!(
        refuse(json!({"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}})),
        "elicitation field `n`: its default is wrong: `n` must be a whole number"
    );
    assert_eq!(refuse(json!({"type": "array"})), "`requestedSchema` must have `\"type\": \"object\"`");
    assert_eq!(
        refuse(json!({"type": "object", "properties": {}, "required": ["ghost"]})),
        "`requestedSchema.required` names `ghost`, which is not a field"
    );
}

#[test]
fn requests_are_read_in_both_modes() {
    let form_request = ElicitRequest::parse(Some(&json!({
        "message": "Who?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    })))
    .unwrap();
    assert_eq!(form_request.mode(), "form");
    assert_eq!(form_request.message(), "Who?");
    let url_request = ElicitRequest::parse(Some(&json!({
        "mode": "url", "message": "Sign in", "url": "https://login.example.com/auth?x=1", "elicitationId": "e1"
    })))
    .unwrap();
    assert_eq!(
        url_request,
        ElicitRequest::Url {
            message: "Sign in".into(),
            url: "https://login.example.com/auth?x=1".into(),
            elicitation_id: Some("e1".into())
        }
    );
    let refused = ElicitRequest::parse(Some(&json!({"mode": "url", "message": "x", "url": "file:///etc/passwd"})));
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the elicitation URL `file:///etc/passwd` is not an http(s) URL; Warden shows no other"
    );
    assert!(url_request.check(ElicitReply::Accept(Some(object(json!({"a": 1}))))).is_err());
    assert_eq!(url_request.check(ElicitReply::Accept(None)).unwrap(), ElicitReply::Accept(None));
}

#[test]
fn the_host_of_a_url_is_what_a_person_is_shown() {
    assert_eq!(url_host("https://login.example.com/auth").as_deref(), Some("login.example.com"));
    assert_eq!(url_host("https://evil.com@bank.example:8443/x").as_deref(), Some("bank.example"));
    assert_eq!(url_host("http://[::1]:80/").as_deref(), Some("[::1]"));
    assert_eq!(url_host("nothing"), None);
}

#[test]
fn modes_are_declared_and_read() {
    assert_eq!(ElicitModes::BOTH.capability(), Some(json!({"form": {}, "url": {}})));
    assert_eq!(ElicitModes::default().capability(), None);
    assert_eq!(ElicitModes::declared_in(&json!({"elicitation": {}})), ElicitModes::FORM);
    assert_eq!(ElicitModes::declared_in(&json!({"elicitation": {"url": {}}})), ElicitModes { form: false, url: true });
    assert_eq!(ElicitModes::declared_in(&json!({"roots": {}})), ElicitModes::default());
}
