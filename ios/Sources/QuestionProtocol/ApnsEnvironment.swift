// Which APNs environment the push token the OS hands over belongs to. It is
// not the build configuration: it is the `aps-environment` entitlement the
// app was signed with, which comes from the provisioning profile (a debug
// build signed for distribution gets production tokens, a release build
// signed with a development profile gets sandbox ones). The signed app
// carries its profile as embedded.mobileprovision (development and ad hoc
// builds); App Store and TestFlight builds carry none and are always
// production. Foundation only: extension-safe.
import Foundation

public enum QPApnsEnvironment {
    /// The environment of this app's push tokens, from its signing profile
    /// (`Bundle.main`'s embedded.mobileprovision). Call it in the app, not
    /// the extension (whose profile is its own, though normally the same).
    public static func current(bundle: Bundle = .main) -> ApnsEnvironment {
        #if targetEnvironment(simulator)
        return .sandbox // the Simulator registers with the sandbox
        #else
        let profile = bundle.url(forResource: "embedded", withExtension: "mobileprovision")
            .flatMap { try? Data(contentsOf: $0) }
        return of(provisioningProfile: profile)
        #endif
    }

    /// The environment a provisioning profile's `Entitlements` name:
    /// `aps-environment` "development" is `.sandbox`, "production" (or no
    /// profile at all: App Store, TestFlight) `.production`. A profile is a
    /// signed CMS envelope around an XML property list; the list is read
    /// out of it as is (the signature was checked when the app was
    /// installed). A profile with no `aps-environment` has no push
    /// capability: `.production`, and the registration will fail anyway.
    public static func of(provisioningProfile data: Data?) -> ApnsEnvironment {
        guard let data,
              let start = data.range(of: Data("<?xml".utf8)),
              let end = data.range(of: Data("</plist>".utf8), in: start.lowerBound..<data.endIndex),
              let plist = try? PropertyListSerialization.propertyList(from: data[start.lowerBound..<end.upperBound],
                                                                       options: [], format: nil) as? [String: Any],
              let entitlements = plist["Entitlements"] as? [String: Any],
              let aps = entitlements["aps-environment"] as? String
        else { return .production }
        return aps == "development" ? .sandbox : .production
    }
}
