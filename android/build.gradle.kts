// The Android library module (an AAR) for a Gradle build: include this
// folder as a module of the app's build, e.g. in settings.gradle.kts
//   include(":questionprotocol")
//   project(":questionprotocol").projectDir = file("path/to/qp/android")
// and `implementation(project(":questionprotocol"))` in the app. The app's
// root build declares the plugin versions (AGP 8+, Kotlin 2.x).
//
// Before building: bindings/package-android (needs the Android NDK and
// cargo-ndk) puts the stripped libqp_ffi.so per ABI in src/main/jniLibs. The
// Kotlin bindings of that shipped library are committed in src/main/bindings
// (android/run-tests fails when they are not bindings/generate's output for
// the shipped feature set). Never build against ../build/bindings: the test
// scripts write the FEATURES=testing bindings there, whose extra exports
// the shipped .so lacks (JNA would fail to load it in a release build).
//
// Released as io.questionprotocol:qp-android on Maven Central (the AAR with
// the native libraries; .github/workflows/android.yml builds it with
// settings.gradle.kts as the root, signs and publishes it; the coordinate
// and version are in gradle.properties).
//
// Not built on the project's machines: Google's Maven repository (AGP,
// AndroidX) and the NDK are not reachable there. What is tested there is
// the same source set compiled by kotlinc and run under Robolectric
// (pom.xml, android/run-tests).
plugins {
    id("com.android.library")
    id("org.jetbrains.kotlin.android")
    id("com.vanniktech.maven.publish")
}

android {
    namespace = "io.questionprotocol.android"
    compileSdk = 35

    defaultConfig {
        minSdk = 26
        // Keeps JNA and the generated bindings through the app's R8.
        consumerProguardFiles("consumer-rules.pro")
    }

    sourceSets["main"].apply {
        kotlin.srcDirs("src/main/kotlin", "src/main/generated", "src/main/bindings")
        jniLibs.srcDirs("src/main/jniLibs")
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }
}

kotlin {
    jvmToolchain(17)
}

dependencies {
    // The AAR: JNA with its Android native dispatch libraries.
    implementation("net.java.dev.jna:jna:5.17.0@aar")
    implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.10.2")
}

// The published POM (Maven Central requires name, description, URL,
// license, developers and SCM). Signed with the key the release workflow
// passes as ORG_GRADLE_PROJECT_signingInMemoryKey; builds without the key
// (every push, pull request, a contributor's machine) publish unsigned to
// the local Maven repository, since signing without a key fails the build.
mavenPublishing {
    publishToMavenCentral()
    if (providers.gradleProperty("signingInMemoryKey").isPresent) {
        signAllPublications()
    }
    pom {
        name.set("Question Protocol for Android")
        description.set("Answer Question Protocol questions from the lock screen: the Rust core (qp-core) with its Kotlin bindings and the Android glue (notifications, answers, sync).")
        url.set("https://github.com/questionprotocol/qp")
        inceptionYear.set("2025")
        licenses {
            license {
                name.set("Apache-2.0")
                url.set("https://www.apache.org/licenses/LICENSE-2.0.txt")
                distribution.set("repo")
            }
        }
        developers {
            developer {
                id.set("questionprotocol")
                name.set("The Question Protocol authors")
                url.set("https://github.com/questionprotocol")
            }
        }
        scm {
            url.set("https://github.com/questionprotocol/qp")
            connection.set("scm:git:https://github.com/questionprotocol/qp.git")
            developerConnection.set("scm:git:ssh://git@github.com/questionprotocol/qp.git")
        }
    }
}
