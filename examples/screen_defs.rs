use mcp_lock::screen::{Context, screen};
use mcp_lock::surface::Kind;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let defs: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut ctx = Context::default();
    for d in &defs {
        if d["kind"] == "tool" {
            ctx.add(
                d["server"].as_str().unwrap(),
                [d["name"].as_str().unwrap().to_string()],
            );
        }
    }
    for d in &defs {
        let kind = match d["kind"].as_str().unwrap() {
            "tool" => Kind::Tool,
            "prompt" => Kind::Prompt,
            _ => Kind::ResourceTemplate,
        };
        for f in screen(kind, &d["def"], d["server"].as_str().unwrap(), &ctx) {
            println!(
                "{} {}/{} {} {} | {} | {}",
                f.severity,
                d["server"].as_str().unwrap(),
                d["name"].as_str().unwrap(),
                f.rule,
                f.pointer,
                f.quote,
                f.reason
            );
        }
    }
}
