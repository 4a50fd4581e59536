extension String {
    /// Whether the string holds a control character: Unicode's general category Cc, which is
    /// exactly U+0000–U+001F and U+007F–U+009F.
    ///
    /// A range check on each scalar, where `properties.generalCategory` looks every scalar up in
    /// the runtime's Unicode tables (about 10,000 instructions a provisioning request, which
    /// checks the cardholder's name and its text inputs this way).
    public var containsControlCharacter: Bool {
        unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}
