/* t-parsers.c */
#include "tap.h"
int main(void){plan(0);return 0;}
