import SystemServices
import Testing

/// The XDG base directories by the spec's rules, read in one place for the
/// replica's home, the desktop's applications and mimeapps.list, the
/// picker's state and the dev server's folder.
@Suite struct XDGDirectoriesTests {
    @Test func defaultsWhenUnsetEmptyOrRelative() {
        for value in [nil, "", "relative/path"] as [String?] {
            var environment = ["HOME": "/home/u"]
            for name in ["XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS"] {
                environment[name] = value
            }
            let xdg = XDGDirectories(environment: environment)
            #expect(
                xdg.dataHome == "/home/u/.local/share" && xdg.configHome == "/home/u/.config"
                    && xdg.stateHome == "/home/u/.local/state")
            #expect(xdg.dataDirs == ["/usr/local/share", "/usr/share"] && xdg.configDirs == ["/etc/xdg"])
        }
    }

    @Test func absoluteValuesWinAndListsKeepTheirAbsoluteEntries() {
        let xdg = XDGDirectories(environment: [
            "HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s",
            "XDG_DATA_DIRS": "/a:rel::/b", "XDG_CONFIG_DIRS": "/x",
        ])
        #expect(xdg.dataHome == "/d" && xdg.configHome == "/c" && xdg.stateHome == "/s")
        #expect(xdg.dataDirs == ["/a", "/b"] && xdg.configDirs == ["/x"])
    }

    @Test func anEmptyHomeIsTheUsersOwn() {
        let xdg = XDGDirectories(environment: ["HOME": ""])
        #expect(xdg.home.hasPrefix("/") && xdg.dataHome == xdg.home + "/.local/share")
    }
}
