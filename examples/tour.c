#include <stdio.h>
#include "tinytorch.h"
int main(void) {
    return 0;
}
