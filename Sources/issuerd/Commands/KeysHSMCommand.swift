import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdCrypto
import IssuerdKeys
import IssuerdPKCS11

/// `issuerd keys hsm init|status|add-data-key|import-visa-secret`: the issuer keys in a PKCS#11 HSM.
enum KeysHSMCommand {
    static let usage = """
        issuerd keys hsm init [--pin-stdin] [--no-tav-key] [--public-key-out FILE] [--config FILE]
        issuerd keys hsm status [--config FILE]
        issuerd keys hsm add-data-key [--import-master-key] [--config FILE]
        issuerd keys hsm import-visa-secret --secret-file FILE [--label LABEL] [--config FILE]

        init          creates the keys in the configured token (development, tests, a new
                      partition): the AES-256 wrapping key of PAN data keys
                      (ISSUERD_PKCS11_WRAP_KEY_LABEL, default issuerd-pan-kek) and an
                      RSA-2048 TAV signing key (ISSUERD_PKCS11_SIGNING_KEY_LABEL, default issuerd-tav),
                      both sensitive and never extractable. Keys already present are checked,
                      not replaced. Prints the TAV public key (PEM) to register with MDES, or
                      writes it to --public-key-out.
        status        what the token holds (labels, types, sizes, sensitive/extractable flags,
                      allowed operations), whether the configured keys pass their checks, and,
                      with ISSUERD_DATABASE_URL, which data key versions are stored and unwrap.
                      Never prints a PIN or key byte.
        add-data-key  generates a PAN data key in the HSM, wraps it with the wrapping key and
                      stores it in PostgreSQL under the next version. With --import-master-key,
                      wraps the ISSUERD_MASTER_KEY (and _PREVIOUS) versions instead, under their
                      own versions: the first step of moving from environment keys to the HSM
                      (docs/runbook.md). Restart the instances, then run issuerd keys rotate.
        import-visa-secret
                      imports the key-encryption key of Visa's encrypted payment instrument,
                      SHA-256 of the shared secret Visa issued (the 0600 file --secret-file,
                      one trailing newline ignored), as an AES-256 key that is sensitive,
                      never extractable and may only encrypt; labelled --label, else
                      ISSUERD_VISA_ENCRYPTION_KEY_LABEL, else issuerd-visa-kek. An existing
                      key of that label is never replaced. Then set
                      ISSUERD_VISA_ENCRYPTION_KEY_LABEL in place of
                      ISSUERD_VISA_ENCRYPTION_SHARED_SECRET and delete the file.

        Run these as the user the service runs as: with SoftHSM, a token belongs to the owner of
        its token directory (directories.tokendir in SOFTHSM2_CONF), and the commands refuse to
        run as anyone else, since keys another user creates there are unreadable to the service.

        The PIN comes from ISSUERD_PKCS11_PIN_FILE, or with --pin-stdin (init only) from the
        first line of standard input (asked for, and not shown, on a terminal); it is never an
        argument.

        Environment: ISSUERD_PKCS11_MODULE, ISSUERD_PKCS11_TOKEN_LABEL, ISSUERD_PKCS11_PIN_FILE,
        ISSUERD_PKCS11_WRAP_KEY_LABEL, ISSUERD_PKCS11_SIGNING_KEY_LABEL, ISSUERD_DATABASE_URL
        (status, add-data-key), ISSUERD_MASTER_KEY (--import-master-key),
        ISSUERD_VISA_ENCRYPTION_KEY_LABEL (status, import-visa-secret)
        """

    static func run(_ words: [String]) throws -> Int32 {
        try Subcommand.run(
            words, usage: usage,
            [
                "init": initialise, "status": status, "add-data-key": addDataKey,
                "import-visa-secret": importVisaSecret,
            ])
    }

    private static func parse(
        _ words: [String], options: Set<String> = [], flags: Set<String> = []
    ) throws -> Arguments? {
        let arguments = try Arguments(words, options: options.union(["config"]), flags: flags)
        if arguments.wantsHelp {
            print(usage)
            return nil
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        return arguments
    }

    private static func initialise(_ words: [String]) throws -> Int32 {
        guard let arguments = try parse(words, options: ["public-key-out"], flags: ["pin-stdin", "no-tav-key"]) else {
            return 0
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        try HSMTokenOwner.refuseOtherUser(module: reader.string("ISSUERD_PKCS11_MODULE"))
        let pin =
            arguments.flag("pin-stdin")
            ? try OperatorCommandSupport.setting { try pkcs11 { try PKCS11PIN(standardInput: .standardInput) } } : nil
        let (store, _) = try OperatorCommandSupport.setting { try OperatorSettings.hsm(reader, pin: pin) }
        let token = store.token
        let wrapping = store.settings.wrappingKeyLabel
        try pkcs11 {
            do {
                try token.createWrappingKey(label: wrapping)
                print("created wrapping key '\(wrapping)' (AES-256, sensitive, never extractable, wrap/unwrap only)")
            } catch let error as PKCS11Error where error.code == .keyExists {
                print("wrapping key '\(wrapping)' is present")
            }
        }
        try OperatorCommandSupport.setting { try store.checkWrappingKey() }
        guard !arguments.flag("no-tav-key") else { return 0 }
        let tavLabel = store.settings.tavKeyLabel ?? HSMSettings.defaultTAVKeyLabel
        try pkcs11 {
            do {
                try token.createRSASigningKey(label: tavLabel)
                print("created TAV signing key '\(tavLabel)' (RSA-2048, sensitive, never extractable, sign only)")
            } catch let error as PKCS11Error where error.code == .keyExists {
                print("TAV signing key '\(tavLabel)' is present")
            }
            _ = try PKCS11RSASigner(token: token, label: tavLabel)
        }
        if store.settings.tavKeyLabel == nil {
            print("set ISSUERD_PKCS11_SIGNING_KEY_LABEL=\(tavLabel) to sign TAVs with it")
        }
        let pem = try publicKeyPEM(store, label: tavLabel)
        if let path = arguments.option("public-key-out") {
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o644])
            else {
                throw CommandFailure("cannot write \(path)")
            }
            print("TAV public key written to \(path) (register it with MDES)")
        } else {
            print("TAV public key (register it with MDES):")
            print(pem, terminator: pem.hasSuffix("\n") ? "" : "\n")
        }
        return 0
    }

    private static func status(_ words: [String]) throws -> Int32 {
        guard let arguments = try parse(words) else { return 0 }
        let reader = try OperatorCommandSupport.reader(arguments)
        try HSMTokenOwner.refuseOtherUser(module: reader.string("ISSUERD_PKCS11_MODULE"))
        let (store, masterKeys) = try OperatorCommandSupport.setting { try OperatorSettings.hsm(reader) }
        let info = try pkcs11 { try store.token.info }
        print(
            "token '\(info.label)': \(info.manufacturer) \(info.model), serial \(info.serialNumber), module \(store.settings.modulePath)"
        )
        let objects = try pkcs11 { try store.token.objects() }
        print("objects: \(objects.count)")
        for object in objects.sorted(by: { ($0.label, $0.objectClass) < ($1.label, $1.objectClass) }) {
            var line = "  '\(object.label)' \(object.objectClass)"
            if let type = object.keyType { line += " \(type)" }
            if let bits = object.bits { line += "-\(bits)" }
            if let sensitive = object.sensitive { line += " sensitive=\(sensitive)" }
            if let extractable = object.extractable { line += " extractable=\(extractable)" }
            if let never = object.neverExtractable { line += " never-extractable=\(never)" }
            if !object.usage.isEmpty { line += " usage=\(object.usage.joined(separator: ","))" }
            print(line)
        }
        var healthy = true
        do {
            try store.checkWrappingKey()
            print("wrapping key '\(store.settings.wrappingKeyLabel)': ok")
        } catch let error as ConfigurationError {
            healthy = false
            print("wrapping key '\(store.settings.wrappingKeyLabel)': \(error.problem)")
        }
        if let label = store.settings.tavKeyLabel {
            do {
                _ = try store.tavSigner()
                print("TAV signing key '\(label)': ok, TAVs are signed in the HSM")
            } catch let error as ConfigurationError {
                healthy = false
                print("TAV signing key '\(label)': \(error.problem)")
            }
        } else {
            print("TAV signing key: not in the HSM (ISSUERD_PKCS11_SIGNING_KEY_LABEL is unset)")
        }
        if let label = reader.string(VisaPushSettings.keyLabelSetting) {
            do {
                _ = try store.contentKeyWrapper(label: label, setting: VisaPushSettings.keyLabelSetting)
                print("Visa key-encryption key '\(label)': ok, Visa payloads are sealed in the HSM")
            } catch let error as ConfigurationError {
                healthy = false
                print("Visa key-encryption key '\(label)': \(error.problem)")
            }
        }
        if reader.string("ISSUERD_DATABASE_URL") != nil {
            let pool = try OperatorCommandSupport.pool(reader)
            defer { pool.close() }
            let stored = try OperatorCommandSupport.failing {
                try pool.withConnection { try HSMDataKey.all(connection: $0) }
            }
            print("data keys in PostgreSQL: \(stored.isEmpty ? "none" : "")")
            for key in stored {
                let opens: String
                do {
                    _ = try store.unwrap(key)
                    opens = "unwraps"
                } catch let error as CommandInputError {
                    healthy = false
                    opens = "DOES NOT UNWRAP (\(error.description))"
                }
                print(
                    "  version \(key.version): \(key.origin), wrapped by '\(key.wrappingKeyLabel)', created \(ISO8601DateFormatter().string(from: key.createdAt)), \(opens)"
                )
            }
            let environment = masterKeys.map(\.version).sorted()
            if !environment.isEmpty { print("environment master key versions still set: \(environment)") }
        }
        return healthy ? 0 : 1
    }

    private static func addDataKey(_ words: [String]) throws -> Int32 {
        guard let arguments = try parse(words, flags: ["import-master-key"]) else { return 0 }
        let reader = try OperatorCommandSupport.reader(arguments)
        try HSMTokenOwner.refuseOtherUser(module: reader.string("ISSUERD_PKCS11_MODULE"))
        let (store, masterKeys) = try OperatorCommandSupport.setting { try OperatorSettings.hsm(reader) }
        let pool = try OperatorCommandSupport.pool(reader)
        defer { pool.close() }
        let summary = try OperatorCommandSupport.failing {
            try pkcs11 {
                if arguments.flag("import-master-key") {
                    return try HSMDataKeyProvisioning.importEnvironment(
                        hsm: store, masterKeys: masterKeys, database: pool, actor: OperatorCommandSupport.actor)
                }
                return try HSMDataKeyProvisioning.addGenerated(
                    hsm: store, masterKeys: masterKeys, database: pool, actor: OperatorCommandSupport.actor)
            }
        }
        for version in summary.added {
            print("stored data key version \(version) (wrapped by '\(store.settings.wrappingKeyLabel)')")
        }
        for version in summary.alreadyPresent { print("data key version \(version) is stored already (same key)") }
        if !summary.added.isEmpty {
            print("next: restart every instance with the HSM settings, then run issuerd keys rotate")
        }
        return 0
    }

    private static func importVisaSecret(_ words: [String]) throws -> Int32 {
        guard let arguments = try parse(words, options: ["secret-file", "label"]) else { return 0 }
        guard let path = arguments.option("secret-file") else {
            throw UsageError("keys hsm import-visa-secret needs --secret-file FILE (Visa's shared secret, mode 0600)")
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let label =
            arguments.option("label") ?? reader.string(VisaPushSettings.keyLabelSetting)
            ?? VisaPushSettings.defaultKeyLabel
        var secret = try OperatorCommandSupport.setting { try VisaPushSettings.secretFile(path, key: "--secret-file") }
        defer { _ = secret.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let key = try CompactJWE.keyEncryptionKey(sharedSecret: secret)
        let (store, _) = try OperatorCommandSupport.setting { try OperatorSettings.hsm(reader) }
        try pkcs11 { try key.withUnsafeBytes { try store.token.importEncryptionKey(label: label, value: $0) } }
        _ = try OperatorCommandSupport.setting {
            try store.contentKeyWrapper(label: label, setting: VisaPushSettings.keyLabelSetting)
        }
        print(
            "imported Visa key-encryption key '\(label)' (AES-256, SHA-256 of the shared secret, sensitive, never extractable, encrypt only)"
        )
        if reader.string(VisaPushSettings.keyLabelSetting) != label {
            print("set ISSUERD_VISA_ENCRYPTION_KEY_LABEL=\(label) in place of ISSUERD_VISA_ENCRYPTION_SHARED_SECRET")
        }
        print("then delete \(path): the service no longer reads it")
        return 0
    }

    private static func publicKeyPEM(_ store: HSMKeyStore, label: String) throws -> String {
        let (modulus, exponent) = try pkcs11 { try store.token.rsaPublicKey(label: label) }
        do {
            return try RSA.Signing.PublicKey(modulus: modulus, exponent: exponent).pemRepresentation
        } catch let error as CryptoError {
            throw CommandFailure("the TAV key '\(label)' has an unusable public key: \(error)")
        }
    }

    /// Turns a ``PKCS11Error`` into the one line the command prints.
    private static func pkcs11<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PKCS11Error {
            throw CommandFailure("HSM: \(error)")
        }
    }
}
