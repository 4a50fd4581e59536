import CPKCS11

extension PKCS11Token {
    /// Every object the logged-in user can see (at most 1,000), for `keys hsm status`.
    public func objects() throws -> [PKCS11ObjectInfo] {
        try withSession { session in
            try session.findObjects([], limit: 1000).map { try PKCS11ObjectInfo.read($0, session: session) }
        }
    }

    /// Creates the wrapping key of PAN data keys: AES-256, a token object, sensitive, never
    /// extractable, allowed only to wrap and unwrap.
    ///
    /// - Throws: ``PKCS11Error/Code/keyExists`` when a secret key with the label is already there.
    public func createWrappingKey(label: String) throws {
        try checkLabel(label)
        try withSession { session in
            try requireNoSecretKey(label: label, session: session)
            _ = try session.generateKey(
                mechanism: CK_MECHANISM_TYPE(CKM_AES_KEY_GEN),
                [
                    .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES), .number(CKA_VALUE_LEN, 32),
                    .data(CKA_LABEL, Array(label.utf8)), .flag(CKA_TOKEN, true), .flag(CKA_PRIVATE, true),
                    .flag(CKA_SENSITIVE, true), .flag(CKA_EXTRACTABLE, false), .flag(CKA_WRAP, true),
                    .flag(CKA_UNWRAP, true),
                    .flag(CKA_ENCRYPT, false), .flag(CKA_DECRYPT, false), .flag(CKA_SIGN, false),
                    .flag(CKA_VERIFY, false),
                ])
        }
    }

    /// Imports a 32-byte AES key as a token object that can only encrypt (``PKCS11AESGCMEncrypter``):
    /// sensitive and never extractable, so it cannot be read or wrapped out after the import. For
    /// a key derived outside the HSM (Visa's key-encryption key, SHA-256 of the shared secret).
    ///
    /// - Parameter value: The key bytes, lent for the call; only the token keeps them.
    /// - Throws: ``PKCS11Error/Code/keyExists`` when a secret key with the label is already there;
    ///   ``PKCS11Error/Code/invalidInput`` for a value that is not 32 bytes.
    public func importEncryptionKey(label: String, value: UnsafeRawBufferPointer) throws {
        try checkLabel(label)
        guard value.count == 32 else { throw PKCS11Error(.invalidInput, "an AES-256 key must be 32 bytes") }
        try withSession { session in
            try requireNoSecretKey(label: label, session: session)
            _ = try session.createObject([
                .number(CKA_CLASS, CKO_SECRET_KEY), .number(CKA_KEY_TYPE, CKK_AES),
                .secret(CK_ATTRIBUTE_TYPE(CKA_VALUE), value), .data(CKA_LABEL, Array(label.utf8)),
                .flag(CKA_TOKEN, true), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, true),
                .flag(CKA_EXTRACTABLE, false), .flag(CKA_ENCRYPT, true), .flag(CKA_DECRYPT, false),
                .flag(CKA_WRAP, false), .flag(CKA_UNWRAP, false), .flag(CKA_SIGN, false), .flag(CKA_VERIFY, false),
            ])
        }
    }

    /// Refuses to create a second secret key with `label` (a key is never replaced).
    private func requireNoSecretKey(label: String, session: PKCS11Session) throws {
        guard
            try session.findObjects(
                [.number(CKA_CLASS, CKO_SECRET_KEY), .data(CKA_LABEL, Array(label.utf8))], limit: 1
            ).isEmpty
        else {
            throw PKCS11Error(.keyExists, "token '\(self.label)' already holds a secret key labelled '\(label)'")
        }
    }

    /// Creates an RSA key pair for activation-data signing: the private half sensitive and never
    /// extractable, allowed only to sign (PKCS#1 v1.5 SHA-256 for Mastercard TAV).
    ///
    /// - Throws: ``PKCS11Error/Code/keyExists`` when a private key with the label is already there.
    public func createRSASigningKey(label: String, bits: Int = 2048) throws {
        try createRSAKeyPair(label: label, bits: bits, decrypt: false)
    }

    /// Creates an RSA key pair for MDES issuer encryption: the private half sensitive and never
    /// extractable, allowed only to decrypt (the AES key of an inbound `encryptedPayload`,
    /// ``PKCS11RSADecrypter``); the public half allowed to encrypt.
    ///
    /// - Throws: ``PKCS11Error/Code/keyExists`` when a private key with the label is already there.
    public func createRSADecryptionKey(label: String, bits: Int = 2048) throws {
        try createRSAKeyPair(label: label, bits: bits, decrypt: true)
    }

    private func createRSAKeyPair(label: String, bits: Int, decrypt: Bool) throws {
        try checkLabel(label)
        guard [2048, 3072, 4096].contains(bits) else {
            throw PKCS11Error(.invalidInput, "RSA key size must be 2048, 3072 or 4096 bits")
        }
        try withSession { session in
            guard
                try session.findObjects(
                    [.number(CKA_CLASS, CKO_PRIVATE_KEY), .data(CKA_LABEL, Array(label.utf8))], limit: 1
                ).isEmpty
            else {
                throw PKCS11Error(.keyExists, "token '\(self.label)' already holds a private key labelled '\(label)'")
            }
            var mechanism = CK_MECHANISM(
                mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN), pParameter: nil, ulParameterLen: 0)
            var publicKey: CK_OBJECT_HANDLE = 0
            var privateKey: CK_OBJECT_HANDLE = 0
            let id = Array(label.utf8.prefix(64))
            let publicTemplate: [PKCS11Attribute] = [
                .number(CKA_CLASS, CKO_PUBLIC_KEY), .number(CKA_KEY_TYPE, CKK_RSA), .data(CKA_LABEL, Array(label.utf8)),
                .data(CKA_ID, id),
                .flag(CKA_TOKEN, true), .flag(CKA_VERIFY, !decrypt), .flag(CKA_ENCRYPT, decrypt),
                .flag(CKA_WRAP, false),
                .number(CKA_MODULUS_BITS, bits), .data(CKA_PUBLIC_EXPONENT, [0x01, 0x00, 0x01]),
            ]
            let privateTemplate: [PKCS11Attribute] = [
                .number(CKA_CLASS, CKO_PRIVATE_KEY), .number(CKA_KEY_TYPE, CKK_RSA),
                .data(CKA_LABEL, Array(label.utf8)), .data(CKA_ID, id),
                .flag(CKA_TOKEN, true), .flag(CKA_PRIVATE, true), .flag(CKA_SENSITIVE, true),
                .flag(CKA_EXTRACTABLE, false),
                .flag(CKA_SIGN, !decrypt), .flag(CKA_DECRYPT, decrypt), .flag(CKA_UNWRAP, false),
            ]
            try PKCS11Attribute.withTemplate(publicTemplate) { publicAttributes, publicCount in
                try PKCS11Attribute.withTemplate(privateTemplate) { privateAttributes, privateCount in
                    try session.check(
                        "C_GenerateKeyPair",
                        session.functions.C_GenerateKeyPair!(
                            session.handle, &mechanism, publicAttributes, publicCount, privateAttributes, privateCount,
                            &publicKey, &privateKey))
                }
            }
        }
    }

    /// The RSA public key of the signing key labelled `label` (modulus and exponent, big-endian),
    /// from its public object or, when the token keeps none, from the private object's public
    /// attributes.
    public func rsaPublicKey(label: String) throws -> (modulus: [UInt8], exponent: [UInt8]) {
        try withSession { session in
            let candidates = try session.findObjects(
                [.number(CKA_CLASS, CKO_PUBLIC_KEY), .data(CKA_LABEL, Array(label.utf8))], limit: 1)
            let object =
                try candidates.first ?? handle(label: label, objectClass: UInt(CKO_PRIVATE_KEY), session: session)
            guard let modulus = try session.attribute(CK_ATTRIBUTE_TYPE(CKA_MODULUS), of: object),
                let exponent = try session.attribute(CK_ATTRIBUTE_TYPE(CKA_PUBLIC_EXPONENT), of: object)
            else {
                throw PKCS11Error(.keyWrongType, "the key labelled '\(label)' has no RSA modulus and exponent")
            }
            return (modulus, exponent)
        }
    }

    /// Checks that the secret key labelled `label` is fit to wrap PAN data keys: AES-256,
    /// sensitive, not extractable, allowed to wrap and unwrap.
    ///
    /// - Throws: ``PKCS11Error/Code/keyNotFound``, ``PKCS11Error/Code/keyWrongType`` or
    ///   ``PKCS11Error/Code/keyExtractable`` naming the attribute at fault.
    public func checkWrappingKey(label: String) throws {
        try withSession { session in
            let key = try handle(label: label, objectClass: UInt(CKO_SECRET_KEY), session: session)
            let info = try PKCS11ObjectInfo.read(key, session: session)
            guard info.keyType == "AES", info.bits == 256 else {
                throw PKCS11Error(
                    .keyWrongType,
                    "the wrapping key '\(label)' is \(info.keyType ?? "untyped") \(info.bits.map { "\($0)-bit" } ?? ""), not AES-256"
                )
            }
            try Self.requireNonExtractable(info, role: "wrapping key")
            guard info.usage.contains("wrap"), info.usage.contains("unwrap") else {
                throw PKCS11Error(
                    .keyWrongType,
                    "the wrapping key '\(label)' must allow CKA_WRAP and CKA_UNWRAP (allows: \(info.usage.joined(separator: ", ")))"
                )
            }
        }
    }

    /// Finds the private key labelled `label` and checks it: RSA, at least 2048 bits, allowed
    /// `usage` (`decrypt`, `sign`: the attribute `CKA_` + its upper case), sensitive, not
    /// extractable; errors name the key by `role`.
    ///
    /// - Returns: The modulus size in bits.
    func checkedRSAPrivateKeyBits(label: String, role: String, usage: String) throws -> Int {
        try withSession { session in
            let key = try handle(label: label, objectClass: UInt(CKO_PRIVATE_KEY), session: session)
            let info = try PKCS11ObjectInfo.read(key, session: session)
            guard info.keyType == "RSA" else {
                throw PKCS11Error(.keyWrongType, "the \(role) '\(label)' is \(info.keyType ?? "untyped"), not RSA")
            }
            guard let bits = info.bits, bits >= 2048 else {
                throw PKCS11Error(
                    .keyWrongType, "the \(role) '\(label)' has \(info.bits ?? 0) bits; at least 2048 are required")
            }
            guard info.usage.contains(usage) else {
                throw PKCS11Error(.keyWrongType, "the \(role) '\(label)' does not allow CKA_\(usage.uppercased())")
            }
            try Self.requireNonExtractable(info, role: role)
            return bits
        }
    }

    static func requireNonExtractable(_ info: PKCS11ObjectInfo, role: String) throws {
        guard info.sensitive == true else {
            throw PKCS11Error(
                .keyExtractable,
                "the \(role) '\(info.label)' has CKA_SENSITIVE false: its value can be read from the token")
        }
        guard info.extractable == false else {
            throw PKCS11Error(
                .keyExtractable,
                "the \(role) '\(info.label)' has CKA_EXTRACTABLE true: it can be wrapped out of the token")
        }
    }

    func checkLabel(_ label: String) throws {
        guard (1...64).contains(label.utf8.count),
            label.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F })
        else {
            throw PKCS11Error(.invalidInput, "a key label must be 1 to 64 printable ASCII characters")
        }
    }
}
