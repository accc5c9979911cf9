// `fulcrum doctor`: is this server's software stack consistent and set up for training? Three
// parts, each in its own file: the facts probed from the machine (doctor_facts.h), the driver
// table of the catalog (driver_table.h) and the pure checks over both (doctor_checks.h). This
// header gathers them for the command.
#pragma once

#include "nodecheck/doctor_checks.h"
#include "nodecheck/doctor_facts.h"
#include "nodecheck/driver_table.h"
