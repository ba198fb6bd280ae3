// t-header-cxx.cc: the public header compiles as C++ and a C++ plugin can register itself.
#include "perfmod-plugin.h"
#include "perfmod.h"            // libperfmod's header too

#include <cstdio>

static struct perfmod_plugin plugin;

PERFMOD_REGISTER_PLUGIN (plugin)

int
main ()
{
  plugin.name = "cxx";
  const struct perfmod_plugin *p = perfmod_plugin_init ();
  std::printf ("1..2\n");
  std::printf ("%sok 1 - registration from C++\n", p->abi_version == PERFMOD_ABI_VERSION ? "" : "not ");
  std::printf ("%sok 2 - struct_size is the whole struct\n",
               p->struct_size == sizeof (struct perfmod_plugin) ? "" : "not ");
  return 0;
}
