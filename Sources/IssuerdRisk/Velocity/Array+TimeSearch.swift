extension Array {
    /// The index of the first element whose `time` is not before `bound`, in elements kept in
    /// ascending `time` (binary search): where a velocity window over them starts or ends.
    func firstIndex(notBefore bound: Double, time: (Element) -> Double) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if time(self[middle]) < bound { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
