/// Calendar arithmetic without Foundation's calendars (which are locale- and zone-aware and
/// slow): used by parsers of HTTP dates and ASN.1 GeneralizedTime.
public enum CivilDate {
    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's algorithm).
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
