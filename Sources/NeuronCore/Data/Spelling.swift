/// How far apart two names are, for "did you mean" suggestions in error messages.
public enum Spelling {
    /// Edit distance counting insertions, deletions, substitutions and swaps of neighbours
    /// (`modle` is one edit from `model`): the optimal-string-alignment form of Damerau–Levenshtein.
    public static func distance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        // Three rows of the table: before the previous, the previous, and the current.
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }

    /// The candidate nearest to `word` when it is close enough to be a likely typo, else nil: a
    /// suggestion only where one helps (`species` is no hint for a missing `sepal_length`).
    ///
    /// Words are compared ignoring case, `_` and `-` (so `learning_rate` finds `learningRate`); close
    /// means at most one edit in four (at least one, at most three), or one word starting the other
    /// (`batch` finds `batchSize`). Ties go to the first candidate.
    public static func nearest(to word: String, in candidates: [String]) -> String? {
        func normalized(_ s: String) -> [Character] { Array(s.lowercased().filter { $0 != "_" && $0 != "-" }) }
        let target = normalized(word)
        var best: (candidate: String, score: Int)?
        for candidate in candidates {
            let c = normalized(candidate)
            let distance = distance(c, target)
            let limit = max(1, min(3, c.count / 4))
            let isPrefix = min(c.count, target.count) >= 3 && (c.starts(with: target) || target.starts(with: c))
            guard distance <= limit || isPrefix else { continue }
            let score = isPrefix && distance > limit ? limit + 1 : distance
            if best == nil || score < best!.score { best = (candidate, score) }
        }
        return best?.candidate
    }
}
