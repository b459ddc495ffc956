// Module a includes module b, which it does not depend on, and climbs into b's sources.
#include "../b/z.h"
#include "b/z.h"
#include "projector/b/y.h"
