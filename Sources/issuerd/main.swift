import Foundation

exit(CommandLineTool.main(CommandLine.arguments))
