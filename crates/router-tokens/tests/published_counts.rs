//! The estimate against real Claude counts: the request bodies and
//! `input_tokens` of Anthropic's public token-counting guide (D-37, issue 3
//! item 8). The error is documented in the crate docs; this test keeps the
//! documented figures true.

use router_tokens::estimate_input_tokens;

/// (case, request body, Claude's published `input_tokens`, our estimate).
const CASES: &[(&str, &str, u64, u64)] = &[
    (
        "system prompt and one user turn",
        r#"{"model": "m", "system": "You are a scientist",
            "messages": [{"role": "user", "content": "Hello, Claude"}]}"#,
        14,
        16,
    ),
    (
        "one tool and one user turn",
        r#"{"model": "m",
            "tools": [{"name": "get_weather",
                       "description": "Get the current weather in a given location",
                       "input_schema": {"type": "object",
                                        "properties": {"location": {"type": "string",
                                            "description": "The city and state, e.g. San Francisco, CA"}},
                                        "required": ["location"]}}],
            "messages": [{"role": "user", "content": "What's the weather like in San Francisco?"}]}"#,
        403,
        412,
    ),
];

#[test]
fn estimates_of_the_published_examples_are_as_documented() {
    for (case, body, claude, documented) in CASES {
        let request = router_messages::MessagesClient
            .parse_count_tokens_body(body.as_bytes())
            .unwrap();
        let estimate = estimate_input_tokens(&request);
        println!("{case}: Claude {claude}, estimate {estimate}");
        assert_eq!(estimate, *documented, "{case} (Claude counts {claude})");
    }
}
