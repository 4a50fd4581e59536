extension Duration {
    /// The duration in seconds, fractions included (what `Date`, `Thread` and `URLRequest`
    /// take as a `TimeInterval`): the one conversion every module uses.
    public var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
