//! Diesel table definitions, written by hand to match `migrations/` (there
//! is no diesel CLI here to print them); `tests/store/schema.rs` checks the
//! column lists against the migrated database.

diesel::table! {
    accounts (id) {
        id -> Uuid,
        email -> Text,
        email_verified -> Bool,
        created_at -> Timestamptz,
        zero_data_retention -> Bool,
    }
}

diesel::table! {
    wallets (account_id) {
        account_id -> Uuid,
        balance_nano -> Int8,
        held_nano -> Int8,
        updated_at -> Timestamptz,
        shortfall_count -> Int8,
        shortfall_nano -> Int8,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        account_id -> Uuid,
        key_hash -> Bytea,
        display_prefix -> Text,
        scopes -> Array<Text>,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
        allowed_models -> Nullable<Array<Text>>,
        ip_allowlist -> Nullable<Array<Text>>,
        prompt_cache_mode -> Nullable<Text>,
        policy_version -> Int8,
        spend_limit_nano -> Nullable<Array<Int8>>,
        spend_limit_seconds -> Nullable<Array<Int8>>,
        monthly_budget_nano -> Nullable<Int8>,
        requests_per_minute -> Nullable<Int8>,
        requests_per_day -> Nullable<Int8>,
        max_concurrent_requests -> Nullable<Int8>,
        response_cache_ttl_seconds -> Nullable<Int4>,
    }
}

diesel::table! {
    requests (id) {
        id -> Uuid,
        account_id -> Uuid,
        api_key_id -> Uuid,
        model -> Text,
        inbound_protocol -> Text,
        recorded_protocol -> Text,
        stream -> Bool,
        status -> Text,
        reserved_nano -> Int8,
        charged_nano -> Nullable<Int8>,
        input_tokens -> Nullable<Int8>,
        output_tokens -> Nullable<Int8>,
        cache_read_tokens -> Nullable<Int8>,
        cache_write_tokens -> Nullable<Int8>,
        reasoning_tokens -> Nullable<Int8>,
        route_id -> Nullable<Text>,
        error_reason -> Nullable<Text>,
        created_at -> Timestamptz,
        finished_at -> Nullable<Timestamptz>,
        reported_nano -> Nullable<Int8>,
        experiment_id -> Nullable<Uuid>,
        experiment_variant -> Nullable<Text>,
        cache_hit -> Bool,
    }
}

diesel::table! {
    holds (request_id) {
        request_id -> Uuid,
        account_id -> Uuid,
        amount_nano -> Int8,
        status -> Text,
        expires_at -> Timestamptz,
        created_at -> Timestamptz,
        released_at -> Nullable<Timestamptz>,
        api_key_id -> Nullable<Uuid>,
        lease_id -> Nullable<Uuid>,
    }
}

diesel::table! {
    ledger_entries (id) {
        id -> Int8,
        txn_id -> Uuid,
        request_id -> Nullable<Uuid>,
        account_id -> Nullable<Uuid>,
        ledger_account -> Text,
        amount_nano -> Int8,
        kind -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    attempts (request_id, attempt_no) {
        request_id -> Uuid,
        attempt_no -> Int4,
        route_id -> Text,
        supplier_id -> Text,
        upstream_protocol -> Text,
        started_at -> Timestamptz,
        duration_ms -> Int8,
        outcome -> Text,
        upstream_status -> Nullable<Int4>,
        failure_kind -> Nullable<Text>,
        retryable -> Nullable<Bool>,
        supplier_request_id -> Nullable<Text>,
    }
}

diesel::table! {
    thinking_seal_keys (version) {
        version -> Int2,
        secret -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    browser_sessions (id) {
        id -> Uuid,
        account_id -> Uuid,
        token_hash -> Bytea,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    magic_links (token_hash) {
        token_hash -> Bytea,
        account_id -> Uuid,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    data_protection_changes (id) {
        id -> Uuid,
        account_id -> Uuid,
        zero_data_retention -> Bool,
        session_id -> Uuid,
        changed_at -> Timestamptz,
    }
}

diesel::table! {
    uploads (id) {
        id -> Uuid,
        account_id -> Uuid,
        object_key -> Text,
        filename -> Nullable<Text>,
        bytes -> Int8,
        mime_type -> Text,
        width -> Int4,
        height -> Int4,
        status -> Text,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
        deleted_at -> Nullable<Timestamptz>,
        removed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    job_leases (name) {
        name -> Text,
        leased_until -> Timestamptz,
        leased_by -> Text,
        last_started_at -> Timestamptz,
        last_finished_at -> Nullable<Timestamptz>,
        last_processed -> Nullable<Int8>,
        last_error -> Nullable<Text>,
    }
}

diesel::joinable!(wallets -> accounts (account_id));
diesel::joinable!(data_protection_changes -> accounts (account_id));
diesel::joinable!(uploads -> accounts (account_id));
diesel::joinable!(browser_sessions -> accounts (account_id));
diesel::joinable!(magic_links -> accounts (account_id));
diesel::joinable!(api_keys -> accounts (account_id));
diesel::joinable!(requests -> accounts (account_id));
diesel::joinable!(requests -> api_keys (api_key_id));
diesel::joinable!(holds -> requests (request_id));
diesel::joinable!(attempts -> requests (request_id));

diesel::allow_tables_to_appear_in_same_query!(
    accounts,
    wallets,
    api_keys,
    requests,
    holds,
    ledger_entries,
    attempts,
    browser_sessions,
    magic_links,
    data_protection_changes,
    uploads,
);
