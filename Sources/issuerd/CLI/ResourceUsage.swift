import Foundation

/// This process's resource use, for the summaries of long operator commands.
enum ResourceUsage {
    /// The peak resident set size so far, in MiB (`getrusage`: Linux reports KiB).
    static func peakResidentMebibytes() -> Int {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss) / 1024
    }
}
