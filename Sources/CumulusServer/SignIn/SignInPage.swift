import Foundation

/// The HTML of the sign-in page (issue 41): a form, and the page that hands a new
/// session to the app that opened it. Every value put in the HTML goes through
/// ``escape(_:)``; the one script is allowed by a per-answer nonce, and the page says
/// so in its `Content-Security-Policy`, with framing, referrers and caching off.
enum SignInPage {
    /// What the form carries from the sign-in URL to its POST.
    struct Request: Sendable, Equatable {
        var container: String
        var environment: String
        var apiToken: String
        /// The app's origin, checked against what the API token allows (`nil`: no
        /// app to hand the session to).
        var origin: String?
    }

    /// The headers every sign-in answer carries; `nonce` allows the answer's script.
    static func headers(nonce: String?) -> [String: String] {
        let script = nonce.map { "'nonce-\($0)'" } ?? "'none'"
        return [
            "content-security-policy":
                "default-src 'none'; script-src \(script); style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            "x-frame-options": "DENY",
            // Not no-referrer: under it a browser sends `Origin: null` with the form's own POST.
            "referrer-policy": "same-origin",
            "cache-control": "no-store",
            "x-content-type-options": "nosniff",
        ]
    }

    static let contentType = "text/html; charset=utf-8"

    /// `text` safe inside HTML text and double-quoted attribute values.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// `text` as a JavaScript string literal that is also safe inside `<script>`.
    static func scriptString(_ text: String) -> String {
        var literal = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": literal += "\\\""
            case "\\": literal += "\\\\"
            case "<": literal += "\\u003c"
            case ">": literal += "\\u003e"
            case "&": literal += "\\u0026"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                literal += String(format: "\\u%04x", scalar.value)
            default: literal.unicodeScalars.append(scalar)
            }
        }
        return literal + "\""
    }

    private static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title))</title>
        <style>
        body{font:16px/1.4 system-ui,sans-serif;margin:0;padding:0 1rem;background:#f4f5f7;color:#1d1f23}
        main{box-sizing:border-box;max-width:25rem;margin:3rem auto;padding:1.5rem;background:#fff;border-radius:8px;box-shadow:0 1px 4px #0002}
        h1{font-size:1.25rem;margin:0 0 .25rem}p.app{margin:0 0 1rem;color:#555;font-size:.9rem;word-break:break-all}
        label{display:block;margin:.75rem 0 .25rem;font-weight:600}
        input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #bbb;border-radius:4px;font:inherit}
        .keep{display:flex;gap:.5rem;align-items:center;margin-top:.75rem;font-weight:400}
        button{margin-top:1rem;width:100%;padding:.6rem;border:0;border-radius:4px;background:#2463eb;color:#fff;font:inherit;cursor:pointer}
        .error{color:#b00020;margin:.5rem 0}.or{margin:.75rem 0 0;color:#555;font-size:.9rem}
        </style></head>
        <body><main>
        \(body)
        </main></body></html>
        """
    }

    /// The form, with `error` above it if the last attempt failed.
    static func form(_ request: Request, csrf: String, error: String? = nil, user: String = "") -> String {
        let hidden = [
            ("container", request.container), ("environment", request.environment), ("ckAPIToken", request.apiToken),
            ("origin", request.origin ?? ""), ("csrf", csrf),
        ].map { #"<input type="hidden" name="\#($0.0)" value="\#(escape($0.1))">"# }.joined(separator: "\n")
        let app = request.origin.map { "for \(escape($0)) · " } ?? ""
        return page(
            title: "Sign in",
            body: """
                <h1>Sign in</h1>
                <p class="app">\(app)\(escape(request.container)) (\(escape(request.environment)))</p>
                \(error.map { #"<p class="error" role="alert">\#(escape($0))</p>"# } ?? "")
                <form method="post" action="/signin" autocomplete="on">
                \(hidden)
                <label for="user">User</label>
                <input type="text" id="user" name="user" value="\(escape(user))" autocomplete="username" required autofocus>
                <label for="password">Password</label>
                <input type="password" id="password" name="password" autocomplete="current-password">
                <p class="or">or a one-time sign-in code from your administrator:</p>
                <label for="code">Sign-in code</label>
                <input type="text" id="code" name="code" autocomplete="one-time-code" spellcheck="false">
                <label class="keep"><input type="checkbox" name="keep" value="1"> Keep me signed in (two weeks)</label>
                <button type="submit">Sign in</button>
                </form>
                """)
    }

    /// The page after a sign-in: hands `session` to the window that opened it, at
    /// `origin` only, and closes. Without an origin (or an opener) it only says so.
    static func signedIn(session: String, origin: String?, nonce: String) -> String {
        let script = origin.map { origin in
            """
            <script nonce="\(nonce)">
            (function () {
              var origin = \(scriptString(origin));
              if (window.opener) {
                window.opener.postMessage({ ckSession: \(scriptString(session)) }, origin);
                window.close();
              }
            })();
            </script>
            """
        } ?? ""
        return page(
            title: "Signed in",
            body: """
                <h1>Signed in</h1>
                <p>You are signed in. You may close this window and return to the app.</p>
                \(script)
                """)
    }

    /// A page for a sign-in URL that cannot be served (a bad link), saying why.
    static func failure(_ reason: String) -> String {
        page(title: "Cannot sign in", body: "<h1>Cannot sign in</h1>\n<p class=\"error\">\(escape(reason))</p>")
    }
}
