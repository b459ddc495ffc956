// Module b declares a dependency on a and includes nothing of it.
#include "projector/b/y.h"
