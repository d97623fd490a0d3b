/// Pages for answers that are not the thing asked for (401, 404, 405, 500).
enum ErrorPage {
    static func render(status: Int, title: String, message: String) -> HTML {
        Layout.page(title: "\(status) \(title)", """
            <h1>\(title)</h1>
            <p class="error" id="error">\(message)</p>
            <p><a href="/">Back to search</a></p>
            """ as HTML)
    }
}
