// swift-tools-version:5.9
// (Tools 5.9: the Swift 5 language mode, as uniffi's generated code expects.)
//
// The Swift package of the Question Protocol: add it by this repository's
// git URL (or, developing, this folder as a local package). Its sources are
// in ios/; it sits at the repository's root so SwiftPM finds it there.
//
// Two products, split by where they run:
// - QuestionProtocol: extension-safe. The bindings, the notification flows,
//   QPNotificationService and the notification center: everything the
//   Notification Service Extension links. It never touches
//   `UIApplication.shared` (ios/run-tests compiles it with the
//   application-extension restriction and checks that a planted use fails).
// - QuestionProtocolApp: the app's side (lifecycle, answer handler,
//   background tasks), marked `@available(iOSApplicationExtension, unavailable)`.
//
// The Rust library (QuestionProtocolFFI):
// - a released XCFramework by URL and checksum: set `released` below (a
//   release tag does), or QP_XCFRAMEWORK_URL and QP_XCFRAMEWORK_CHECKSUM in
//   the environment (the checksum `swift package compute-checksum` prints
//   for the zip; bindings/release-swift-package VERSION URL sets both);
// - otherwise the local build: run bindings/package-xcframework on a Mac
//   first; it builds ios/QuestionProtocolFFI.xcframework (not committed).
// The Swift bindings uniffi generates for the shipped library,
// ios/Sources/QuestionProtocol/QuestionProtocol.swift, are committed (a
// consumer by URL builds them from the tag); ios/run-tests fails when they
// differ from what bindings/generate makes of this commit's library.
//
// On Linux (how the project tests the package: ios/run-tests): the Rust
// library is built locally, its C header and module map go in
// ios/Linux/QuestionProtocolFFI, and the Apple glue is compiled against the
// compile-time stand-ins in ios/AppleStandIns/ (see the README there).
import PackageDescription

/// The released XCFramework this version of the package uses; nil on the
/// development branch (the local path is used).
let released: (url: String, checksum: String)? = nil

#if os(Linux)
let ffi: Target = .systemLibrary(name: "QuestionProtocolFFI", path: "ios/Linux/QuestionProtocolFFI")
let standIns: [Target] = ["UserNotifications", "UIKit", "BackgroundTasks", "Security"].map {
    .target(name: $0, path: "ios/AppleStandIns/\($0)")
} + [.target(name: "SwiftUI", dependencies: ["UIKit"], path: "ios/AppleStandIns/SwiftUI")]
let extensionDependencies: [Target.Dependency] = ["QuestionProtocolFFI", "UserNotifications"]
let appDependencies: [Target.Dependency] = ["QuestionProtocol", "UserNotifications", "UIKit", "BackgroundTasks"]
let snippetDependencies: [Target.Dependency] = ["QuestionProtocol", "QuestionProtocolApp", "UIKit", "Security", "SwiftUI"]
#else
let environment = Context.environment
let remote = environment["QP_XCFRAMEWORK_URL"].map { (url: $0, checksum: environment["QP_XCFRAMEWORK_CHECKSUM"] ?? "") }
    ?? released
let ffi: Target = remote.map { Target.binaryTarget(name: "QuestionProtocolFFI", url: $0.url, checksum: $0.checksum) }
    ?? .binaryTarget(name: "QuestionProtocolFFI", path: "ios/QuestionProtocolFFI.xcframework")
let standIns: [Target] = []
let extensionDependencies: [Target.Dependency] = ["QuestionProtocolFFI"]
let appDependencies: [Target.Dependency] = ["QuestionProtocol"]
let snippetDependencies: [Target.Dependency] = ["QuestionProtocol", "QuestionProtocolApp"]
#endif

let package = Package(
    name: "QuestionProtocol",
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "QuestionProtocol", targets: ["QuestionProtocol"]),
        .library(name: "QuestionProtocolApp", targets: ["QuestionProtocolApp"]),
    ],
    targets: [ffi] + standIns + [
        .target(
            name: "QuestionProtocol",
            dependencies: extensionDependencies,
            path: "ios/Sources/QuestionProtocol",
            // Apple's privacy manifest: SQLite's file-timestamp and file-system
            // reads (required-reason APIs) of its own files in the app's and
            // the App Group's containers (bindings/check-privacy-manifest).
            resources: [.copy("PrivacyInfo.xcprivacy")],
            // The Rust library is a static archive: its system frameworks are
            // not linked with it. Security: its randomness on iOS (getrandom's
            // SecRandomCopyBytes); CoreFoundation: the time zone (chrono).
            linkerSettings: [
                .linkedFramework("Security", .when(platforms: [.iOS, .macOS])),
                .linkedFramework("CoreFoundation", .when(platforms: [.iOS, .macOS])),
            ]
        ),
        .target(
            name: "QuestionProtocolApp",
            dependencies: appDependencies,
            path: "ios/Sources/QuestionProtocolApp"
        ),
        // The docs' Swift code (README.md, docs/), compiled (scripts/check-snippets keeps the
        // docs' blocks equal to the marked regions of these files).
        .target(
            name: "QuestionProtocolSnippets",
            dependencies: snippetDependencies,
            path: "ios/ReadmeSnippets" // not "Snippets": SwiftPM builds that folder as swift-snippets
        ),
        .testTarget(
            name: "QuestionProtocolTests",
            dependencies: ["QuestionProtocol", "QuestionProtocolApp", "QuestionProtocolSnippets"],
            path: "ios/Tests/QuestionProtocolTests"
        ),
    ]
)
