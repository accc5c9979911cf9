# Install-time step (install(SCRIPT), see the end of CMakeLists.txt): writes the systemd unit with
# ExecStart naming the installed binary (<prefix>/<bindir>/fulcrum) and installs it into
# <prefix>/lib/systemd/system. Needs FULCRUM_UNIT_SOURCE, FULCRUM_UNIT_BINDIR and
# FULCRUM_UNIT_STAGING (set by an install(CODE) just before).
file(READ "${FULCRUM_UNIT_SOURCE}" unit)
string(REPLACE "/usr/local/bin/fulcrum " "${CMAKE_INSTALL_PREFIX}/${FULCRUM_UNIT_BINDIR}/fulcrum "
       unit "${unit}")
file(WRITE "${FULCRUM_UNIT_STAGING}/fulcrum-agent.service" "${unit}")
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES "${FULCRUM_UNIT_STAGING}/fulcrum-agent.service")
