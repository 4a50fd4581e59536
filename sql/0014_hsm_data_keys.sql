-- Envelope encryption: the PAN data keys, each wrapped (RFC 3394 AES key wrap) by
-- a non-extractable AES-256 key in the HSM. Only wrapped bytes are stored here; the service
-- unwraps them once at start into locked memory. `version` is the key version stored beside
-- every sealed PAN (cards.pan_key_version), so a ring may mix imported environment keys and
-- HSM-generated ones under one numbering.
CREATE TABLE hsm_data_keys (
    version integer PRIMARY KEY CHECK (version BETWEEN 1 AND 9999),
    wrapped_key bytea NOT NULL CHECK (octet_length(wrapped_key) = 40),
    wrapping_key_label text NOT NULL CHECK (length(wrapping_key_label) BETWEEN 1 AND 64),
    origin text NOT NULL CHECK (origin IN ('generated', 'imported')),
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL
);
