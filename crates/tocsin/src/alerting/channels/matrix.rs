//! `MATRIX`: an `m.room.message` event sent to a room through the Client-Server API
//! (`{"homeserverUrl", "accessToken", "roomId"}`; the token is a secret). The transaction id
//! is the message id, so a retried attempt is the same event to the homeserver (it
//! deduplicates per access token). Plain `body` plus an HTML `formatted_body`.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_text, check_url, endpoint, escape_html, finish, parse, parse_stored, ChannelType,
    ConfigError, HttpMethod, HttpRequest, Message, Outgoing, Provider, RenderError,
};

pub struct Matrix;

/// The `config` of a MATRIX channel: a message to a room.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "MatrixChannelConfig", extend("x-channel-type" = "MATRIX"))]
struct Config {
    /// The homeserver's address (https://matrix.org, say).
    #[schemars(title = "Homeserver URL")]
    homeserver_url: String,
    /// The access token of the account that posts (it must have joined the room).
    #[schemars(title = "Access token", extend("format" = "password"))]
    access_token: String,
    /// The room, as `!id:server` or `#alias:server`.
    #[schemars(title = "Room")]
    room_id: String,
}

fn segment(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Provider for Matrix {
    fn kind(&self) -> ChannelType {
        ChannelType::Matrix
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["accessToken"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_url("config.homeserverUrl", &c.homeserver_url, &mut errors);
        check_text("config.accessToken", &c.access_token, 500, &mut errors);
        let room_ok = (c.room_id.starts_with('!') || c.room_id.starts_with('#'))
            && c.room_id.contains(':')
            && c.room_id.len() <= 255;
        if !room_ok {
            errors.push(ConfigError::new(
                "config.roomId",
                "must be a room id like !abc:example.org",
            ));
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let mut plain = msg.title.clone();
        let mut html = format!("<h4>{}</h4><ul>", escape_html(&msg.title));
        for (k, v) in msg.facts() {
            plain.push_str(&format!("\n{k}: {v}"));
            html.push_str(&format!("<li><b>{k}:</b> {}</li>", escape_html(&v)));
        }
        html.push_str("</ul>");
        if let Some(ack) = &msg.acknowledge_url {
            plain.push_str(&format!("\nAcknowledge: {ack}"));
            html.push_str(&format!(
                "<p><a href=\"{}\">Acknowledge</a></p>",
                escape_html(ack)
            ));
        }
        let body = json!({
            "msgtype": "m.text",
            "body": plain,
            "format": "org.matrix.custom.html",
            "formatted_body": html,
        });
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            segment(&c.room_id),
            segment(&msg.message_id)
        );
        let mut req = HttpRequest::json(endpoint(&c.homeserver_url, &path), &body)
            .header("authorization", format!("Bearer {}", c.access_token));
        req.method = HttpMethod::Put;
        Ok(Outgoing::Http(req))
    }
}
